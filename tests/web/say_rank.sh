#!/bin/sh
# The test's entrypoint for two_ranks.yaml: a line from every rank, then the Core API program.
echo "rank $COHORT_RANK of $COHORT_SIZE starts"
exec ./core_api_4_distributed "$@"
