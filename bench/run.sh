#!/usr/bin/env bash
# Runs every benchmark quoted in docs/performance.md, in the order of its
# table. Figures are only comparable on an idle machine: check `uptime`.
set -eu
cd "$(dirname "$0")/.."
uptime
# Issue 2: authenticated /auth/me against a static handler (target >= 60 %).
go test ./server -run '^$' -bench 'AuthMe|Static' -benchtime 3s -count 3
go test ./db -run '^$' -bench Authenticate -benchtime 2s -count 3
# Issue 3: effective config against /auth/me (target >= 70 %), PUT with fsync.
go test ./server -run '^$' -bench 'BenchmarkConfigEffective' -benchtime 2s -count 2
go test ./server -run '^$' -bench 'BenchmarkConfigPut' -benchtime 100x
# Request path over loopback TCP, ratios to a bare handler in one run
# (targets: /auth/me >= 0.75, effective config >= 0.9), ETag/304/gzip.
go test ./server -run '^$' -bench HTTPAuthMeRatio -benchtime 400x -count 3
go test ./server -run '^$' -bench 'HTTPEffective' -benchtime 400x -count 3
# The same measurement with one bare handler on both sides: the noise floor.
go test ./server -run '^$' -bench HTTPRatioControl -benchtime 400x -count 3
# The same ratios from outside: the built rootcause serve against a bare binary.
go test ./bench/reqpath -run '^$' -bench . -benchtime 1000x -count 2
go test ./server -run '^$' -bench RouteOwnCode -benchtime 300000x -count 3
# Config history: include_full=false < 2 ms, growth per version, logging.
go test ./db -run '^$' -bench ConfigVersionGrowth -benchtime 1x
go test ./db -run '^$' -bench ConfigHistory -benchtime 2s
go test ./logwriter -run '^$' -bench LogLine
go test ./server -run '^$' -bench RequestLine -count 3
# Per-request work of the store's authentication and the HTTP metrics.
go test ./metrics -run '^$' -bench ObserveHTTP -count 3
# Issue 4: run overhead with a no-op engine (target p50 < 5 ms), list at 100k.
go test ./agent -run '^$' -bench RunOverhead -benchtime 200x -count 3
# An investigation of the public OOM scenario through the server (target < 100 ms).
go test ./agent -run '^$' -bench OOMThroughServer -benchtime 50x -count 3
go test ./db -run '^$' -bench ListInvestigations -benchtime 2s -count 1
# The 10,000-version migration check (about 5 minutes, 700 MB of temp disk).
ROOTCAUSE_TEST_MIGRATION_VERSIONS=10000 go test ./db -run TestMigration0003 -v -timeout 30m
# Issue 5: peak memory scanning a 200 MB log (target < 100 MB).
go test ./agent/evidence/bundle -run '^$' -bench Scan200MB -benchtime 1x
# PromQL on a 50 MB bundle: load, instant and range queries (no numeric target).
go test ./agent/evidence/bundle -run '^$' -bench PromBundle50MB -benchtime 3x -count 2
# Traces: scan, index and service graph of one million spans (part of the
# localization target: < 10 s and < 500 MB with metrics and logs).
go test ./agent/evidence/bundle -run '^$' -bench 'TraceScan1M|TraceIndex1M|ServiceGraph1M' -benchtime 3x -benchmem
# Issue 18: localization over 50 services x 40 min of metrics, 1 GB of logs
# and 1M spans read from a bundle on disk (target < 10 s, < 500 MB).
go test ./bench/localize -run '^$' -bench . -benchtime 1x -timeout 30m
# Bundles of 50,000 objects and 500 MB of logs (open < 2 s, investigate < 300 MB).
go test ./bench/bundle -run '^$' -bench . -benchtime 3x -timeout 30m
# Issue 6: analyst on 200 MB of logs (target < 10 s, < 300 MB), eval, demo.
go test ./agent/analyst -run '^$' -bench LargeLog -benchtime 1x -timeout 20m
go build -o /tmp/rootcause-bench .
time go run . eval testdata/scenarios/*
time /tmp/rootcause-bench eval testdata/scenarios/* >/dev/null
time go run . demo >/dev/null
time /tmp/rootcause-bench demo >/dev/null
uptime
