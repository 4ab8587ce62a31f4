#!/usr/bin/env bash
# Starts a real registry (Debian's docker-registry, CNCF distribution) on a free loopback port
# with a throwaway storage directory, for the registry interop tests. Installs the package when
# missing (needs root and apt). Prints, on stdout, the lines to eval:
#   POLYGRAPH_INTEROP_REGISTRY=127.0.0.1:PORT
#   POLYGRAPH_INTEROP_REGISTRY_PID=PID
#   POLYGRAPH_INTEROP_REGISTRY_DIR=DIR   (config, storage and log; remove when done)
# Usage: eval "$(.ci/start-registry.sh)"; ...; kill "$POLYGRAPH_INTEROP_REGISTRY_PID"
set -euo pipefail

if ! command -v docker-registry >/dev/null 2>&1; then
	echo "installing docker-registry" >&2
	apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y docker-registry >&2
fi

# A free port: the first of 5055..5199 nobody answers on.
port=""
for p in $(seq 5055 5199); do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		port=$p
		break
	fi
done
[ -n "$port" ] || { echo "no free loopback port in 5055..5199" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/polygraph-registry.XXXXXX")
mkdir -p "$dir/storage"
cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YAML

nohup docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
pid=$!

for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "POLYGRAPH_INTEROP_REGISTRY=127.0.0.1:$port"
		echo "POLYGRAPH_INTEROP_REGISTRY_PID=$pid"
		echo "POLYGRAPH_INTEROP_REGISTRY_DIR=$dir"
		echo "registry started on 127.0.0.1:$port (pid $pid, storage $dir)" >&2
		exit 0
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
echo "docker-registry did not start; its log:" >&2
cat "$dir/registry.log" >&2
kill "$pid" 2>/dev/null || true
rm -rf "$dir"
exit 1
