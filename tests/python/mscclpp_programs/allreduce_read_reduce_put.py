"""In-place AllReduce, one-shot: threadblock t of rank g owns chunk g * tbs + t; it reads that
chunk from every peer over memory channels and reduces it (rre), then puts the sum back into
every peer (put). Signals before and after order the peers' buffers."""

import argparse

from mscclpp.language.channel import *
from mscclpp.language.collectives import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.rank import *


def allreduce(name, ranks, tbs, instances):
    with CollectiveProgram(name, AllReduce(ranks, tbs, True), ranks, instances=instances,
                           protocol="Simple"):
        channel = {}
        for g in range(ranks):
            for t in range(tbs):
                for p in range(ranks):
                    if p != g:
                        channel[(g, p, t)] = MemoryChannel(p, g)
        for g in range(ranks):
            for t in range(tbs):
                for p in range(ranks):
                    if p != g:
                        channel[(g, p, t)].signal(tb=t, relaxed=True)
                for p in range(ranks):
                    if p != g:
                        channel[(g, p, t)].wait(tb=t, data_sync=SyncType.after, relaxed=True)
        for g in range(ranks):
            buf = Rank(g).get_input_buffer()
            for t in range(tbs):
                k = g * tbs + t
                for p in range(ranks):
                    if p != g:
                        peer = Rank(p).get_input_buffer()
                        channel[(g, p, t)].reduce(buf[k:k + 1], [peer[k:k + 1]], tb=t)
                for p in range(ranks):
                    if p != g:
                        peer = Rank(p).get_input_buffer()
                        channel[(g, p, t)].put(peer[k:k + 1], buf[k:k + 1], tb=t)
                for p in range(ranks):
                    if p != g:
                        channel[(g, p, t)].signal(tb=t, data_sync=SyncType.before)
                for p in range(ranks):
                    if p != g:
                        channel[(g, p, t)].wait(tb=t)
        print(JSON())


parser = argparse.ArgumentParser()
parser.add_argument("--num_gpus", type=int, default=4)
parser.add_argument("--num_tbs", type=int, default=2)
parser.add_argument("--instances", type=int, default=1)
args = parser.parse_args()
allreduce("allreduce_read_reduce_put", args.num_gpus, args.num_tbs, args.instances)
