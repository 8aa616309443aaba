# Sourced by the scripts that check what rustica counted (bench-load.sh,
# bench-process-instructions.sh, test-fips.sh, test-metrics.sh,
# evp-test.sh).
#
#   rustica_counted [--failed] [OP...] < DOC
#       DOC: the output of `rustica stats --json` (or of `--all-users
#       --sum --json`, whose "sum" is read). Prints the operations of the
#       kinds OP (sign, verify, ...; every kind when none is named) that
#       rustica counted as done, whatever the backend: libica + software +
#       fallback, and failed ones too with --failed. Prints nothing and
#       fails when DOC holds no counters (rustica did not run, or could not
#       read its file), so each caller decides what that means.

rustica_counted() {
  python3 -c '
import json, sys
args = sys.argv[1:]
failed = args[:1] == ["--failed"]
names = args[1:] if failed else args
try:
    doc = json.load(sys.stdin)
    ops = doc["sum"]["ops"] if "sum" in doc else doc["ops"]
except (ValueError, KeyError, TypeError):
    sys.exit(1)
backends = ("libica", "software", "fallback") + (("failed",) if failed else ())
print(sum(ops.get(op, {}).get(b, 0) for op in (names or ops) for b in backends))
' "$@"
}
