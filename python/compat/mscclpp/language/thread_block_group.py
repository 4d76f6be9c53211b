"""ThreadBlockGroup: several threadblocks sharing one operation (each does its part)."""

from .internal.errors import fail

__all__ = ["ThreadBlockGroup"]


class ThreadBlockGroup:
    """The threadblocks ``tb_list`` (distinct ids); an operation given ``tb_group=`` is added to
    each, with ``tbg_info`` = (position in the list, list length)."""

    def __init__(self, tb_list):
        self.tb_list = tb_list
        self._tb_id = {}
        for i, tb in enumerate(tb_list):
            if tb in self._tb_id:
                fail("Duplicate thread block found at index %d: %s" % (i, tb), ValueError)
            self._tb_id[tb] = i

    def get_internal_id(self, tb):
        """Position of threadblock ``tb`` in the group."""
        if tb not in self._tb_id:
            fail("Thread block %s not found in thread block group" % (tb,), ValueError)
        return self._tb_id[tb]

    def numtb(self):
        """Number of threadblocks in the group."""
        return len(self.tb_list)
