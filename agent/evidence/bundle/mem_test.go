package bundle

import "runtime"

type runtimeMemStats = runtime.MemStats

func readMem(ms *runtime.MemStats) { runtime.ReadMemStats(ms) }
