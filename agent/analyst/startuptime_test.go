package analyst

import "testing"

// A process's own start-up time is no operation a request waits for;
// request and call durations still are.
func TestLineDurationSkipsStartup(t *testing.T) {
	cases := []struct {
		line string
		want bool
	}{
		{`2026-03-02T10:02:09.928Z  INFO 1 --- [orders] [           main] c.a.orders.OrdersApplication             : Started OrdersApplication in 8.912 seconds (process running for 9.61)`, false},
		{`02-Mar-2026 10:02:09.928 INFO [main] org.apache.catalina.startup.Catalina.start Server startup in [2431] milliseconds`, false},
		{`2026-03-02 10:02:09,928 INFO  [io.quarkus] (main) orders 1.4.0 on JVM (powered by Quarkus 3.8.1) started in 1.212s. Listening on: http://0.0.0.0:8080`, false},
		{`10:02:09.928 [main] INFO  io.micronaut.runtime.Micronaut - Startup completed in 812ms. Server Running: http://localhost:8080`, false},
		{`2026-03-02T10:44:07.731Z  INFO 1 --- [orders] [nio-8080-exec-3] c.a.orders.web.OrderController : POST /orders took=2391ms`, true},
		{`level=info msg="request done" path=/v1/quote duration=2.4s`, true},
	}
	for _, c := range cases {
		if _, ok := lineDuration(c.line); ok != c.want {
			t.Errorf("lineDuration(%q) ok = %v, want %v", c.line, ok, c.want)
		}
	}
}
