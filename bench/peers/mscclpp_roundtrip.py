#!/usr/bin/env python3
"""MSCCL++ plans through chorus's reader and writer: each plan chorus reads is written back as
MSCCL++ JSON (Plan.to_string("mscclpp-json")), read again and verified; the two verdicts must
agree (docs/ir.md "Writing MSCCL++ plans").

  PYTHONPATH=build/python /opt/chorus/venv/bin/python bench/peers/mscclpp_roundtrip.py DIR...

DIR: folders of MSCCL++ plan files (*.json), e.g. an mscclpp checkout's test/execution-files
and the --keep folder of bench/peers/mscclpp_plans.py. Prints one line per plan and a summary;
exits 1 when a verdict changed.
"""

import glob
import os
import sys

import chorus


def verdict(report):
    """"ok", or the kind of the first finding."""
    text = str(report)
    return "ok" if report.ok else text.split(": ", 2)[1] if text.count(": ") >= 2 else text


def main(folders):
    same = changed = unread = 0
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
            with open(path) as f:
                text = f.read()
            try:
                plan = chorus.parse(text, path)[0]
            except chorus.Error as error:
                unread += 1
                print("%s: not read (%s)" % (path, str(error).splitlines()[0][:100]))
                continue
            again = chorus.parse(plan.to_string("mscclpp-json"), path + " (written)")[0]
            before, after = verdict(plan.verify()), verdict(again.verify())
            if before == after:
                same += 1
                print("%s: %s, the same after a round trip" % (path, before))
            else:
                changed += 1
                print("%s: CHANGED: %s before, %s after" % (path, before, after))
    print("%d plans verify alike after a round trip, %d changed, %d not read" %
          (same, changed, unread))
    return 1 if changed else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
