#!/usr/bin/env bash
# rustica's metrics as the monitoring tools read them (docs/statistics.md,
# docs/monitoring.md): signatures made through rustica with the `openssl`
# command, as root and (when run as root) as the user nobody, counted in
# their own files of a private directory; then
#   - `rustica stats --format openmetrics` parsed by the Python client's
#     OpenMetrics parser, `--format prometheus` by its text parser;
#   - Debian's prometheus-node-exporter, started here on 127.0.0.1 (a free
#     port, bounded by timeout, killed at the end) with its textfile
#     collector reading the file `rustica stats --output` wrote, scraped
#     with curl: every rustica series equals `rustica stats --json`;
#   - Debian's Prometheus scraping that node_exporter (promtool checks the
#     alert rules of docs/monitoring.md and the textfile first): a rate
#     query sees signatures made between scrapes.
# Usage: scripts/test-metrics.sh [--debug]   (default: the release build)
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
source scripts/lib/openssl-cnf.sh
source scripts/lib/module.sh
source scripts/lib/counted.sh
profile=release
cargo_flags=(--release)
if [ "${1:-}" = "--debug" ]; then profile=debug; cargo_flags=(); fi
# Debian's python3, which has python3-prometheus-client (not one that a
# python version manager may put first on PATH).
py=/usr/bin/python3
scripts/setup.sh build metrics
for tool in prometheus-node-exporter prometheus promtool curl "$py" openssl setpriv; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/setup.sh metrics installs it)"
done
"$py" -c 'import prometheus_client' 2>/dev/null \
  || die "python3-prometheus-client is missing (scripts/setup.sh metrics installs it)"

cargo build "${cargo_flags[@]}" -p rustica --lib -p rustica-harness --bin rustica
place_module "target/$profile/librustica.so" "target/$profile/rustica.so"
module=$(pwd)/target/$profile/rustica.so
rustica=$(pwd)/target/$profile/rustica

work=$(mktemp -d "${TMPDIR:-/tmp}/rustica-metrics.XXXXXX")
exporter_pid=""
prometheus_pid=""
cleanup() {
  for pid in $prometheus_pid $exporter_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
chmod 0755 "$work"
# The users' counters files, in a directory like /dev/shm (sticky, open
# to all), not the machine's own.
mkdir -m 1777 "$work/shm"
# As packaged (docs/monitoring.md): rustica writes rustica.prom in a
# directory of its own, and node_exporter reads it through a link in its
# textfile directory, which belongs to another user (nobody here, as Debian's
# belongs to prometheus) and was made by that user.
mkdir -m 0755 "$work/textfile" "$work/state"
: >"$work/state/rustica.prom"   # empty until the first run, as postinst makes it
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  chown nobody "$work/textfile"
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    ln -s "$work/state/rustica.prom" "$work/textfile/rustica.prom"
else
  ln -s "$work/state/rustica.prom" "$work/textfile/rustica.prom"
fi
rustica_conf "$work/openssl.cnf" "$module"
chmod 0644 "$work/openssl.cnf"

# Signs `count` times as user `user` (the caller when empty), through
# rustica, counted in that user's file in $work/shm.
sign_as() {
  local user=$1 count=$2 uid run=()
  if [ -n "$user" ]; then uid=$(id -u "$user"); run=(setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups); else uid=$(id -u); fi
  for _ in $(seq "$count"); do
    env OPENSSL_CONF="$work/openssl.cnf" RUSTICA_STATS_PATH="$work/shm/rustica-stats-$uid" \
      "${run[@]}" openssl dgst -sha256 -sign "$work/key.pem" -out /dev/null "$work/openssl.cnf"
  done
}
OPENSSL_CONF="$work/openssl.cnf" RUSTICA_STATS_PATH="$work/shm/rustica-stats-$(id -u)" \
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/key.pem" 2>/dev/null
chmod 0644 "$work/key.pem"   # a throw-away test key, read by the other user
sign_as "" 3
users=1
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  sign_as nobody 2
  users=2
else
  echo "test-metrics: not root: only the caller's counters (CI runs as root and adds nobody's)" >&2
fi

"$rustica" stats --all-users --sum --dir "$work/shm"
"$rustica" stats --all-users --sum --json --dir "$work/shm" >"$work/stats.json"
"$rustica" stats --all-users --format openmetrics --dir "$work/shm" >"$work/openmetrics.txt"
"$rustica" stats --all-users --format prometheus --dir "$work/shm" --output "$work/state/rustica.prom"

# A free loopback port, from the kernel.
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout 300 prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
  --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$work/textfile" >"$work/exporter.log" 2>&1 &
exporter_pid=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/metrics" -o "$work/scraped.txt" 2>/dev/null && break
  kill -0 "$exporter_pid" 2>/dev/null || { cat "$work/exporter.log" >&2; die "node_exporter ended"; }
  sleep 0.1
done
[ -s "$work/scraped.txt" ] || { cat "$work/exporter.log" >&2; die "node_exporter did not answer on 127.0.0.1:$port"; }

# Signatures in the sum of every user's counters, failed ones included.
signed=$(rustica_counted --failed sign <"$work/stats.json")
"$py" - "$work" "$users" "$signed" <<'PY'
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

work, users, signed = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def read(name):
    with open(f"{work}/{name}") as f:
        return f.read()

# Both formats pass the parsers (which raise on any error).
om = list(openmetrics_families(read("openmetrics.txt")))
prom = list(prometheus_families(read("textfile/rustica.prom")))
print(f"openmetrics parser: {len(om)} families, {sum(len(f.samples) for f in om)} samples")
print(f"prometheus text parser: {len(prom)} families, {sum(len(f.samples) for f in prom)} samples")

scraped = {}
for family in prometheus_families(read("scraped.txt")):
    for s in family.samples:
        scraped[(s.name, tuple(sorted(s.labels.items())))] = s.value
errors = [v for (n, _), v in scraped.items() if n == "node_textfile_scrape_error"]
assert errors == [0.0], f"node_exporter could not read the textfile: {errors}"

doc = json.loads(read("stats.json"))
assert len(doc["users"]) == users, doc["users"]
expected = {}
def series(name, labels):
    return (name, tuple(sorted(labels.items())))
for u in doc["users"]:
    who = {"user": u["user"] or str(u["uid"]), "uid": str(u["uid"])}
    for op, c in u["counters"]["ops"].items():
        for backend in ("libica", "software", "fallback", "failed"):
            expected[series("rustica_operations_total", {**who, "operation": op, "backend": backend})] = c[backend]
        expected[series("rustica_async_operations_total", {**who, "operation": op})] = c["async"]
        expected[series("rustica_late_requests_total", {**who, "operation": op})] = c["late"]
        expected[series("rustica_late_answers_discarded_total", {**who, "operation": op})] = c["late_discarded"]
        for bits, n in c["by_bits"].items():
            expected[series("rustica_operations_by_key_size_total", {**who, "operation": op, "bits": bits})] = n
    expected[series("rustica_async_max_inflight", who)] = u["counters"]["async_max_inflight"]
expected[series("rustica_stats_layout_version", {})] = doc["layout_version"]
expected[series("rustica_stats_skipped_files", {})] = len(doc["skipped"])

rustica_scraped = {k: v for k, v in scraped.items() if k[0].startswith("rustica_")}
wrong = []
for key, value in expected.items():
    got = rustica_scraped.pop(key, None)
    if got != value:
        wrong.append(f"{key[0]}{dict(key[1])}: scraped {got}, rustica stats --json {value}")
wrong += [f"{n}{dict(l)}: scraped but not in rustica stats --json" for n, l in rustica_scraped]
if wrong:
    sys.exit("test-metrics: node_exporter and rustica stats --json differ:\n  " + "\n  ".join(wrong))
print(f"node_exporter: {len(expected)} rustica series scraped, all equal to rustica stats --json "
      f"({len(doc['users'])} users; sign: {signed} in all)")
PY

# Prometheus itself (Debian's), scraping that node_exporter every second,
# with the alert rules of docs/monitoring.md: a rate query over rustica's
# series sees the signatures made between two scrapes.
awk '/^```yaml$/ {block = ""; inside = 1; next} inside && /^```$/ {inside = 0; if (block ~ /^groups:/) {printf "%s", block; exit}} inside {block = block $0 "\n"}' \
  docs/monitoring.md >"$work/rules.yml"
promtool check rules "$work/rules.yml"
# The alerts on late adapter answers and on fallback (docs/monitoring.md),
# on input series: a queue that stays stalled fires both, a stall of a few
# seconds (one blip of late requests) fires neither, an adapter offline
# (fallback without late requests) fires only the fallback alert.
cat >"$work/rules-test.yml" <<'YML'
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # web1: a queue that stays stalled: late requests every minute, all
      # of them fallbacks.
      - series: 'rustica_late_requests_total{instance="web1",user="www-data",operation="sign"}'
        values: '0+1x40'
      - series: 'rustica_operations_total{instance="web1",user="www-data",operation="sign",backend="fallback"}'
        values: '0+1x40'
      # web2: one stall of a few seconds: three late requests, once.
      - series: 'rustica_late_requests_total{instance="web2",user="www-data",operation="sign"}'
        values: '0 0 0 3x37'
      - series: 'rustica_operations_total{instance="web2",user="www-data",operation="sign",backend="fallback"}'
        values: '0 0 0 3x37'
      # web3: an adapter offline: fallbacks, no late request.
      - series: 'rustica_late_requests_total{instance="web3",user="www-data",operation="sign"}'
        values: '0x40'
      - series: 'rustica_operations_total{instance="web3",user="www-data",operation="sign",backend="fallback"}'
        values: '0+10x40'
    alert_rule_test:
      - eval_time: 30m
        alertname: RusticaLateAdapterAnswers
        exp_alerts:
          - exp_labels: {instance: web1, user: www-data, alertname: RusticaLateAdapterAnswers}
            exp_annotations:
              summary: "www-data on web1: adapter answers keep missing offload-timeout-ms"
      - eval_time: 30m
        alertname: RusticaFallingBackToSoftware
        exp_alerts:
          - exp_labels: {instance: web1, user: www-data}
            exp_annotations:
              summary: "www-data on web1: libica fails, software finishes"
          - exp_labels: {instance: web3, user: www-data}
            exp_annotations:
              summary: "www-data on web3: libica fails, software finishes"
      # At 12 min: web1 has fired; web2's blip (minute 3) never does.
      - eval_time: 12m
        alertname: RusticaLateAdapterAnswers
        exp_alerts:
          - exp_labels: {instance: web1, user: www-data}
            exp_annotations:
              summary: "www-data on web1: adapter answers keep missing offload-timeout-ms"
YML
promtool test rules "$work/rules-test.yml" || fail "promtool test rules: the alerts of docs/monitoring.md"
promtool check metrics <"$work/textfile/rustica.prom"
prom_port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$work/rules.yml"]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:$port"]
        labels: {role: test, offload: software}
YML
timeout 300 prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prometheus_pid=$!
# Prints the result vector of PromQL query $1 (empty: no result yet).
query() {
  curl -fsS "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" 2>/dev/null \
    | "$py" -c 'import json, sys; print(" ".join(r["value"][1] for r in json.load(sys.stdin)["data"]["result"]))' 2>/dev/null || true
}
# Waits (at most about a minute) until query $1 has a result; prints it.
await() {
  local result=""
  for _ in $(seq 300); do
    result=$(query "$1")
    [ -n "$result" ] && { echo "$result"; return 0; }
    kill -0 "$prometheus_pid" 2>/dev/null || break
    sleep 0.2
  done
  cat "$work/prometheus.log" >&2
  echo "test-metrics: Prometheus never answered: $1" >&2
  return 1
}
uid=$(id -u)
sign_filter="{uid=\"$uid\",operation=\"sign\",backend=\"software\"}"
before=$(await "rustica_operations_total$sign_filter")
sign_as "" 4
"$rustica" stats --all-users --format prometheus --dir "$work/shm" --output "$work/state/rustica.prom"
after=$(await "rustica_operations_total$sign_filter == $((before + 4))")
rate=$(await "rate(rustica_operations_total$sign_filter[1m]) > 0")
echo "prometheus: rustica_operations_total$sign_filter went from $before to $after; rate(...[1m]) = $rate/s"
echo "test-metrics: ok"
