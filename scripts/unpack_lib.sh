#!/usr/bin/env bash
# Unpacks each build folder's gzipped library (scripts/stage_device.sh gzips it: a device call carries
# 64 MiB at most) next to it, replacing a libqsgemm.so.0 left from an earlier call. Folders without
# one are left alone. Every device script calls this before it runs a build.
#   usage: scripts/unpack_lib.sh DIR [DIR ...]
for d in "$@"; do
  [ -f "$d/libqsgemm.so.0.gz" ] || continue
  gzip -dkf "$d/libqsgemm.so.0.gz" || exit 1
done
exit 0
