#!/bin/sh
# The test's entrypoint for many_lines.yaml: 100,000 log lines at once, then a clean exit.
seq 1 100000 | sed 's/^/log line /'
