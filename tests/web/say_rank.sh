#!/bin/sh
# The test's entrypoint for two_ranks.yaml: a line from every rank (and a warning from rank 1,
# for the log's level filter), then the Core API program.
echo "rank $COHORT_RANK of $COHORT_SIZE starts"
if [ "$COHORT_RANK" = 1 ]; then echo "WARNING: rank 1 warns, for the web interface's test"; fi
exec ./core_api_4_distributed "$@"
