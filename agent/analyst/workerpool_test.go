package analyst

import "testing"

func TestWorkerPoolLines(t *testing.T) {
	testLines(t, workerPool, []lineCase{
		{"[2026-04-20 18:51:02 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:42)", KindWorkerPool},
		{"WARNING: [pool www] server reached pm.max_children setting (16), consider raising it", KindWorkerPool},
		{"java.util.concurrent.RejectedExecutionException: Task rejected from ThreadPoolExecutor", KindWorkerPool},
		{"INFO Booting worker with pid: 42", ""},
	})
}
