#!/usr/bin/env bash
# The energy report on damaged and hostile inputs (tests/integration/report_damage.py):
# every case must give the numbers of the file with the damage taken out, finite numbers
# only, and a warning naming the file and the reason.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 "$(dirname "$0")/report_damage.py" "$BIN" "$WORK" || fail "damaged samples files"
ok "damaged samples files"
