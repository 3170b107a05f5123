#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sum TAP results over meson test logs.

Usage: tap-totals.py [--extra PASSED FAILED] testlog.json...

Every "ok"/"not ok" line of every TAP test counts once ("# SKIP" lines are
skipped). A test that failed without printing a "not ok" (a crash, a
timeout, a sanitizer abort) counts as one more failure. Each failure is
named on a "FAILED" line before the totals. The last line
printed is "N passed, M failed, K skipped".
"""
import json
import re
import sys

OK = re.compile(r"^ok\b")
NOT_OK = re.compile(r"^not ok\b")
SKIP = re.compile(r"#\s*SKIP", re.IGNORECASE)


def count(log, failures):
    passed = failed = skipped = 0
    with open(log, encoding="utf-8", errors="replace") as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            test = json.loads(raw)
            p = fl = s = 0
            for line in (test.get("stdout") or "").splitlines():
                if NOT_OK.match(line):
                    fl += 1
                    failures.append(f"{test.get('name', '?')}: {line}")
                elif OK.match(line):
                    if SKIP.search(line):
                        s += 1
                    else:
                        p += 1
            result = test.get("result", "")
            if result == "SKIP" and p + fl == 0:
                s += 1
            elif result not in ("OK", "SKIP", "EXPECTEDFAIL") and fl == 0:
                fl += 1
                failures.append(f"{test.get('name', '?')}: {result} without a 'not ok' line")
            passed, failed, skipped = passed + p, failed + fl, skipped + s
    return passed, failed, skipped


def main(argv):
    passed = failed = skipped = 0
    failures = []
    args = argv[1:]
    while args:
        if args[0] == "--extra":
            passed += int(args[1])
            failed += int(args[2])
            args = args[3:]
            continue
        p, f, s = count(args[0], failures)
        passed, failed, skipped = passed + p, failed + f, skipped + s
        args = args[1:]
    # The failing checks are named before the totals so a CI excerpt shows them.
    for failure in failures:
        print(f"FAILED {failure}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
