#!/bin/bash
# Entrypoint of the offline Elasticsearch stand-in. Like the official image, every
# environment variable whose name looks like a setting (lower case with a dot, e.g.
# discovery.type or xpack.security.enabled) becomes -E name=value, and the node listens on
# every interface.
set -euo pipefail
args=(-E network.host=0.0.0.0)
while IFS='=' read -r -d '' key value; do
  if [[ $key =~ ^[a-z0-9_]+\.[a-z0-9_.]+$ ]]; then args+=(-E "$key=$value"); fi
done < <(env -0)
exec /usr/share/elasticsearch/bin/elasticsearch "${args[@]}" "$@"
