"""msccl.topologies.topology: a bandwidth matrix; MSCCLang uses it for the link check."""

__all__ = ["Topology"]


class Topology:
    """``links[dst][src]`` is the bandwidth from src to dst (0: no link). ``switches`` are
    (srcs, dsts, bandwidth, name) groups sharing bandwidth (synthesis only)."""

    def __init__(self, name, links, switches=()):
        self.name = name
        self.links = links
        self.switches = list(switches)
        for srcs, dsts, bw, switch_name in self.switches:
            if bw <= 0:
                raise ValueError("switch %s has bandwidth %r; switch bandwidths must be > 0 "
                                 "(encode connectedness in links)" % (switch_name, bw))

    def link(self, src, dst):
        """Bandwidth from ``src`` to ``dst`` (0 when they are not linked)."""
        return self.links[dst][src]

    def num_nodes(self):
        return len(self.links)

    def nodes(self):
        return range(self.num_nodes())

    def sources(self, dst):
        """Ranks with a link into ``dst``."""
        return (src for src, bw in enumerate(self.links[dst]) if bw > 0)

    def destinations(self, src):
        """Ranks ``src`` has a link to."""
        return (dst for dst, row in enumerate(self.links) if row[src] > 0)

    def bandwidth_constraints(self):
        """(srcs, dsts, bandwidth, name) for every link and switch."""
        for dst, row in enumerate(self.links):
            for src, bw in enumerate(row):
                if bw > 0:
                    yield ([src], [dst], bw, "%d->%d" % (src, dst))
        for switch in self.switches:
            yield switch

    def __repr__(self):
        return "<Topology %s, %d nodes>" % (self.name, self.num_nodes())
