#!/usr/bin/env bash
# The official image's starter.sh, for what the compose file uses of it: configuration from the
# environment, /data writable by the daemons, the NameNode formatted on its first start.
set -e
/opt/envtoconf.py --destination /opt/hadoop/etc/hadoop
sudo chmod o+rwx /data
if [ -n "${ENSURE_NAMENODE_DIR:-}" ] && [ ! -d "$ENSURE_NAMENODE_DIR" ]; then
  clusterid=()
  [ -n "${ENSURE_NAMENODE_CLUSTERID:-}" ] && clusterid=(-clusterid "$ENSURE_NAMENODE_CLUSTERID")
  /opt/hadoop/bin/hdfs namenode -format -force "${clusterid[@]}"
fi
exec "$@"
