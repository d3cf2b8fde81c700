#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the large search benchmark tree: copies of /usr/include and /usr/share (the text and the
# binary files as they are, symlinks kept as symlinks) under /tmp/ptc-bench/large, until it holds
# at least 50,000 regular files and 500 MB. Both ptc and ripgrep skip the binary files and the
# symlinks, so what is searched is the text. Idempotent: an existing complete tree is kept.
#   bench/make-large-tree.sh [DIR]        (default /tmp/ptc-bench/large)
set -euo pipefail
dir=${1:-${PTC_BENCH_DIR:-/tmp/ptc-bench}/large}
min_files=50000
min_bytes=$((500 * 1000 * 1000))

if [ -f "$dir/.complete" ]; then
        echo "large tree in $dir (kept): $(cat "$dir/.complete")"
        exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"

count() {
        find "$dir" -type f -not -name .complete -printf '%s\n' |
                awk '{n++; s+=$1} END {printf "%d %d\n", n, s}'
}

copy=0
while :; do
        read -r files bytes < <(count)
        if [ "$files" -ge "$min_files" ] && [ "$bytes" -ge "$min_bytes" ]; then
                break
        fi
        copy=$((copy + 1))
        if [ "$copy" -gt 20 ]; then
                echo "cannot reach $min_files files / $min_bytes bytes from /usr" >&2
                exit 1
        fi
        for src in /usr/include /usr/share; do
                [ -d "$src" ] || continue
                mkdir -p "$dir/c$copy"
                # -a keeps mtimes (so the files-target order is stable) and symlinks; unreadable
                # system files are skipped.
                cp -a "$src" "$dir/c$copy/" 2>/dev/null || true
        done
done
read -r files bytes < <(count)
echo "$files files, $bytes bytes, $copy copies" > "$dir/.complete"
echo "large tree in $dir: $(cat "$dir/.complete")"
