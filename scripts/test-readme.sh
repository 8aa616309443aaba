#!/usr/bin/env bash
# The README is tested: every command in the ```sh blocks of README.md and
# of docs/lab.md (the lab's manual, whose commands the README's used to
# be) runs, as written, from the repository's top directory, file by file
# and block by block (the commands of one block share a shell, so a block
# may build what its next line uses); a block fails the run when any of
# its commands fails.
#
# A line is not run when its comment says why, in one of two forms:
#   ...   # not run by CI: REASON        (hardware, a slow size, a benchmark)
#   ...   # (.ci/run runs this ...)      (a stage of .ci/run itself)
# Every skipped line is listed with its reason.
#
#   scripts/test-readme.sh [--list]      # --list: print the plan, run nothing
#
# As root (CI) the package block installs the Debian package and writes
# /etc/ssl/openssl-rustica.cnf; this script removes both again afterwards
# if they were not there before.
# shellcheck source-path=SCRIPTDIR source-path=.
. "$(dirname "$0")/lib/common.sh"
list=0
[ "${1:-}" = "--list" ] && list=1

# The files whose sh blocks run, in this order: README.md first, as its
# package and build blocks make what docs/lab.md's commands use.
files=(README.md docs/lab.md)

# Logical lines of the sh blocks: continuation lines joined, blocks separated
# by a line holding only "@@block FILE".
extract() {
  awk '
    /^```sh[[:space:]]*$/ { inside = 1; print "@@block " FILENAME; next }
    /^```/ && inside      { inside = 0; if (pending != "") { print pending; pending = "" }; next }
    inside {
      line = $0
      if (pending != "") { sub(/^[[:space:]]+/, " ", line); line = pending line; pending = "" }
      if (line ~ /\\$/) { sub(/\\$/, "", line); pending = line; next }
      print line
    }' "${files[@]}"
}

blocks=()
block_files=()
current=""
current_file=""
skipped=0
ran=0
while IFS= read -r line; do
  if [[ "$line" == "@@block "* ]]; then
    if [ -n "$current" ]; then blocks+=("$current"); block_files+=("$current_file"); fi
    current=""
    current_file=${line#@@block }
    continue
  fi
  [[ "$line" =~ ^[[:space:]]*$ ]] && continue
  [[ "$line" =~ ^[[:space:]]*# ]] && continue
  if [[ "$line" == *"# not run by CI:"* ]]; then
    echo "test-readme: not run: ${line%%#*}  (${line##*# not run by CI: })"
    skipped=$((skipped + 1))
    continue
  fi
  if [[ "$line" == *"(.ci/run runs this"* ]]; then
    echo "test-readme: not run here: ${line%%#*}  (.ci/run runs it itself)"
    skipped=$((skipped + 1))
    continue
  fi
  current+="$line"$'\n'
  ran=$((ran + 1))
done < <(extract)
if [ -n "$current" ]; then blocks+=("$current"); block_files+=("$current_file"); fi

if [ "$list" = 1 ]; then
  for i in "${!blocks[@]}"; do printf -- '--- block (%s)\n%s' "${block_files[$i]}" "${blocks[$i]}"; done
  echo "test-readme: $ran commands in ${#blocks[@]} blocks would run; $skipped marked"
  exit 0
fi

had_package=0
dpkg -s rustica >/dev/null 2>&1 && had_package=1
# The package block writes the merged openssl.cnf where the README says
# (root-owned /etc/ssl); removed again if this run created it.
readme_cnf=/etc/ssl/openssl-rustica.cnf
had_cnf=0
[ -e "$readme_cnf" ] && had_cnf=1
cleanup() {
  # Purged, not only removed: its postrm keeps a removed package known to
  # dpkg ("config-files"), and scripts/test-package.sh refuses to start
  # while dpkg knows a rustica package.
  if [ "$had_package" = 0 ] && dpkg -s rustica >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    dpkg -P rustica >/dev/null 2>&1 || true
  fi
  if [ "$had_cnf" = 0 ] && [ -f "$readme_cnf" ] && [ ! -L "$readme_cnf" ] && [ "$(id -u)" = 0 ]; then
    rm -f "$readme_cnf"
  fi
}
trap cleanup EXIT

n=0
for i in "${!blocks[@]}"; do
  b=${blocks[$i]}
  n=$((n + 1))
  echo "=== test-readme: block $n (${block_files[$i]})" >&2
  printf '%s' "$b" | sed 's/^/  $ /' >&2
  start=$SECONDS
  if ! bash -euo pipefail -c "$b"; then
    fail "block $n (${block_files[$i]}) failed"
  fi
  echo "=== test-readme: block $n passed in $((SECONDS - start)) s" >&2
done
echo "test-readme: $ran commands in ${#blocks[@]} blocks ran; $skipped marked as not run, with their reasons above"
