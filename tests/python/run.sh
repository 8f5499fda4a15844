#!/usr/bin/env bash
# Runs the Python tests against a built toolbelt binary: creates the virtual
# environment (setup.sh), then pytest. Builds nothing.
#   test_mcp.py        the MCP client tests (`toolbelt mcp`, `toolbelt serve`)
#   test_checkpoints.py  checkpoints and rewind over MCP (stdio, HTTP), the JSON API and the CLI
#   test_hooks.py      hooks over MCP (stdio, HTTP) and the JSON API; ask as an elicitation;
#                      Claude Code's block-rm.sh unchanged; trust of a workspace's hooks and servers
#   test_web.py        the web page of `toolbelt serve` in headless Chromium (Selenium)
#   test_providers.py  the official openai / anthropic SDKs against the scripted
#                      provider, the example beside the binary: ../examples/scripted_provider
#   test_upstream.py   toolbelt as a client of other MCP servers (upstream_server.py, on the
#                      SDK's MCPServer) and as a gateway in front of them; elicitation
#   test_serve_faults.py  `toolbelt serve` under faults: malformed requests, silent and
#                      slow sockets, wrong tokens, kill -9 under writers, two schedulers
#                      on one PostgreSQL (TOOLBELT_TEST_DATABASE_URL, which it needs)
#   test_replicas.py   three `toolbelt serve` replicas on one PostgreSQL behind HAProxy
#                      (deploy/haproxy/haproxy.cfg): spilled outputs, calls, MCP with and
#                      without affinity, kill -9, SIGTERM, cron, a prompt job's question;
#                      skipped without PostgreSQL, haproxy or psql unless
#                      TOOLBELT_REQUIRE_REPLICAS=1 (then it fails)
#   tests/python/run.sh /path/to/toolbelt [pytest arguments...]   (e.g. -k providers)
# Environment: TOOLBELT_PY_VENV (see setup.sh); TOOLBELT_BIN instead of the first argument;
# TOOLBELT_ARTIFACTS: where test_web.py keeps its screenshots (in web/);
# TOOLBELT_TEST_DATABASE_URL: the PostgreSQL server of test_serve_faults.py
# and test_replicas.py (`.ci/postgres start DIR` prints one); TOOLBELT_FAULTS_SEED replays a
# kill -9 run; TOOLBELT_REQUIRE_REPLICAS=1 makes test_replicas.py fail where it would skip.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-${TOOLBELT_BIN:-}}"
[ $# -gt 0 ] && shift
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "usage: $0 /path/to/toolbelt [pytest arguments...] (got '${bin}')" >&2
    exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

venv="$("$here/setup.sh")"
cd "$here"
TOOLBELT_BIN="$bin" exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@" test_mcp.py test_checkpoints.py test_hooks.py test_diagnostics.py test_upstream.py test_providers.py test_web.py test_serve_faults.py test_replicas.py
