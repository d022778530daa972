#!/usr/bin/env bash
# The official entrypoint's pass-through mode (Kubernetes' driver/executor modes are not here):
# the command under tini, as spark when started as root.
set -e
case "${1:-}" in
  driver|executor)
    echo "this stand-in image runs Spark standalone only, not '$1' (Kubernetes)" >&2
    exit 1
    ;;
esac
if [ "$(id -u)" = 0 ]; then
  exec gosu spark /usr/bin/tini -s -- "$@"
fi
exec /usr/bin/tini -s -- "$@"
