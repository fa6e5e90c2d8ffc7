#!/usr/bin/env bash
# Runs the README's two set-up commands as a new user would: in a fresh clone of the committed HEAD,
# with the system's PATH only (plus the CUDA toolkit's bin), nothing else from this environment.
# Reports each command's exit status and wall time; exits non-zero if either failed. On success the
# clone is removed; on failure it is kept (with its logs) and its path printed.
# Run it before every stop that touches the build or the set-up. Uncommitted changes are not checked.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
COMMANDS=("bash scripts/demo.sh" "bash scripts/test.sh")  # the README's set-up block, in its order

clean_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cuda_bin=
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  if [ -x "$d/nvcc" ]; then cuda_bin=$d; break; fi
done
[ -n "$cuda_bin" ] && clean_path=$clean_path:$cuda_bin

head=$(git rev-parse HEAD) || exit 1
tmp=$(mktemp -d -t mxattn-fresh.XXXXXX)
src=$tmp/main  # ../shared, where CI keeps shared/, is absent here: nothing in the build may need it
echo "fresh_check: $(git log -1 --format='%h %s' "$head")"
changed=$(git status --porcelain --untracked-files=no | wc -l)
untracked=$(git status --porcelain --untracked-files=normal | grep -c '^??')
echo "fresh_check: checks the committed HEAD only: $changed changed tracked and $untracked untracked path(s)" \
  "here are NOT included"
echo "fresh_check: PATH=$clean_path"
if ! git clone -q --no-checkout "$ROOT" "$src" || ! git -C "$src" checkout -q --detach "$head"; then
  echo "fresh_check: clone failed; kept $tmp"
  exit 1
fi

failed=0
results=()
for cmd in "${COMMANDS[@]}"; do
  log=$tmp/$(basename "${cmd##* }" .sh).log
  echo "fresh_check: $cmd (log: $log)"
  start=$(date +%s)
  (cd "$src" && env -i HOME="$HOME" PATH="$clean_path" bash -c "$cmd") >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    results+=("ok      rc=0  ${secs}s  $cmd")
  else
    failed=1
    results+=("FAILED  rc=$rc  ${secs}s  $cmd  (log: $log)")
    tail -25 "$log" | sed 's/^/    /'
  fi
done

echo "fresh_check: results"
for r in "${results[@]}"; do echo "  $r"; done
if [ $failed -eq 0 ]; then
  rm -rf "$tmp"
  echo "fresh_check: passed (removed $tmp)"
else
  echo "fresh_check: FAILED; the clone and logs are kept in $tmp"
  exit 1
fi
