package notify

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The guard is tested on addresses directly: no packet leaves the host.
func TestCheckAddrRefusesInternalAddresses(t *testing.T) {
	for _, addr := range []string{
		"169.254.169.254:80", // cloud metadata
		"10.0.0.1:443",
		"172.16.0.1:443",
		"192.168.1.1:443",
		"127.0.0.1:443",
		"100.64.0.1:443", // CGNAT
		"0.0.0.0:443",
		"224.0.0.1:443",
		"[::1]:443",
		"[fe80::1]:443",
		"[fc00::1]:443",
		"[fd12:3456::1]:443",
		"[::]:443",
		"[::ffff:127.0.0.1]:443",
		"[::ffff:10.0.0.1]:443",
		"[::ffff:169.254.169.254]:80",
		"[64:ff9b::7f00:1]:443", // NAT64 form of 127.0.0.1
		"[ff02::1]:443",
	} {
		for _, network := range []string{"tcp4", "tcp6"} {
			if err := CheckAddr(network, addr, Allowlist{}); !IsRefused(err) {
				t.Errorf("CheckAddr(%s, %s) = %v, want a refusal", network, addr, err)
			}
		}
	}
}

func TestCheckAddrAllowsPublicAndAllowlisted(t *testing.T) {
	for _, addr := range []string{"93.184.216.34:443", "8.8.8.8:8443", "[2606:4700::1111]:443", "[::ffff:8.8.8.8]:443"} {
		if err := CheckAddr("tcp4", addr, Allowlist{}); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want nil", addr, err)
		}
	}
	allow := MustAllowlist("10.0.0.0/8", "127.0.0.1", "::1", "hooks.internal")
	for _, addr := range []string{"10.1.2.3:80", "127.0.0.1:9000", "[::ffff:127.0.0.1]:9000", "[::1]:80"} {
		if err := CheckAddr("tcp6", addr, allow); err != nil {
			t.Errorf("allowlisted CheckAddr(%s) = %v, want nil", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.2:80", "169.254.169.254:80", "192.168.0.1:80"} {
		if err := CheckAddr("tcp4", addr, allow); !IsRefused(err) {
			t.Errorf("CheckAddr(%s) with an unrelated allowlist = %v, want a refusal", addr, err)
		}
	}
	if err := CheckAddr("udp4", "8.8.8.8:53", Allowlist{}); !IsRefused(err) {
		t.Errorf("udp: %v, want a refusal", err)
	}
}

func TestParseAllowlist(t *testing.T) {
	a, err := ParseAllowlist([]string{" 10.0.0.0/8 ", "HOOKS.Internal.", "::1", ""})
	if err != nil {
		t.Fatal(err)
	}
	if !a.AllowsHost("hooks.internal") || !a.AllowsHost("10.9.9.9") || !a.AllowsHost("[::1]") || a.AllowsHost("other.internal") {
		t.Errorf("allowlist matches wrong: %+v", a)
	}
	for _, bad := range []string{"not a host", "10.0.0.0/99", "-bad-.example", "fe80::1%eth0"} {
		if _, err := ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("ParseAllowlist(%q) accepted", bad)
		}
	}
}

func TestValidateURL(t *testing.T) {
	allow := MustAllowlist("127.0.0.1", "hooks.internal", "10.20.0.0/16")
	cases := []struct {
		url   string
		allow Allowlist
		ok    bool
	}{
		{"https://hooks.example.com/rootcause", Allowlist{}, true},
		{"https://hooks.example.com:8443/x?token=1", Allowlist{}, true},
		{"http://hooks.example.com/x", Allowlist{}, false}, // https required
		{"https://user:pw@hooks.example.com/", Allowlist{}, false},
		{"ftp://hooks.example.com/", Allowlist{}, false},
		{"https:///nohost", Allowlist{}, false},
		{"https://127.0.0.1/", Allowlist{}, false},
		{"https://169.254.169.254/latest/meta-data", Allowlist{}, false},
		{"https://10.0.0.1/", Allowlist{}, false},
		{"https://[::1]/", Allowlist{}, false},
		{"https://[fe80::1]/", Allowlist{}, false},
		{"https://100.64.0.1/", Allowlist{}, false},
		{"https://[::ffff:127.0.0.1]/", Allowlist{}, false},
		{"https://localhost/", Allowlist{}, false},
		{"https://api.localhost/", Allowlist{}, false},
		{"http://127.0.0.1:9000/hook", allow, true},
		{"http://hooks.internal/hook", allow, true},
		{"http://10.20.3.4/hook", allow, true},
		{"http://10.21.3.4/hook", allow, false},
		{"https://" + strings.Repeat("a", 2050) + ".com/", Allowlist{}, false},
	}
	for _, c := range cases {
		err := ValidateURL(c.url, c.allow)
		if (err == nil) != c.ok {
			t.Errorf("ValidateURL(%.60q) = %v, want ok=%v", c.url, err, c.ok)
		}
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func listenCounting(t *testing.T, network, addr string) (*countingListener, string) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cl := &countingListener{Listener: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }), ReadHeaderTimeout: time.Second}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return cl, port
}

// Without the allowlist, loopback receivers are refused at connect time and
// no connection reaches the listener; with it, the same request goes
// through.
func TestClientRefusesLoopbackWithoutAllowlist(t *testing.T) {
	v4, port4 := listenCounting(t, "tcp4", "127.0.0.1:0")
	client := NewClient(Allowlist{}, 2*time.Second)
	for _, u := range []string{
		"http://127.0.0.1:" + port4 + "/",
		"https://127.0.0.1:" + port4 + "/",
		"http://localhost:" + port4 + "/",
		"https://localhost:" + port4 + "/",
	} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s succeeded without the allowlist", u)
		} else if !IsRefused(err) {
			t.Errorf("GET %s: %v, want a refusal by the guard", u, err)
		}
	}
	if n := v4.n.Load(); n != 0 {
		t.Fatalf("%d connections reached the 127.0.0.1 listener", n)
	}

	v6, port6 := listenCounting(t, "tcp6", "[::1]:0")
	for _, u := range []string{"https://[::1]:" + port6 + "/", "http://[::1]:" + port6 + "/"} {
		if resp, err := client.Get(u); err == nil {
			resp.Body.Close()
			t.Errorf("GET %s succeeded without the allowlist", u)
		} else if !IsRefused(err) {
			t.Errorf("GET %s: %v, want a refusal", u, err)
		}
	}
	if n := v6.n.Load(); n != 0 {
		t.Fatalf("%d connections reached the [::1] listener", n)
	}

	allowed := NewClient(MustAllowlist("127.0.0.1/32", "::1"), 2*time.Second)
	resp, err := allowed.Get("http://127.0.0.1:" + port4 + "/")
	if err != nil {
		t.Fatalf("allowlisted GET: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || v4.n.Load() != 1 {
		t.Fatalf("allowlisted GET: status %d, %d accepts", resp.StatusCode, v4.n.Load())
	}
	// An allowlisted host name skips the address check for that name only.
	byName := NewClient(MustAllowlist("localhost"), 2*time.Second)
	resp, err = byName.Get("http://localhost:" + port4 + "/")
	if err != nil {
		t.Fatalf("GET by allowlisted name: %v", err)
	}
	resp.Body.Close()
	if _, err := byName.Get("http://127.0.0.1:" + port4 + "/"); !IsRefused(err) {
		t.Fatalf("the IP of an allowlisted name is not itself allowlisted: %v", err)
	}
}

func TestClientDoesNotFollowRedirectsOrUseProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	var target atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/target" {
			target.Add(1)
			return
		}
		http.Redirect(w, r, "/target", http.StatusFound)
	}), ReadHeaderTimeout: time.Second}
	ln2, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln2)
	t.Cleanup(func() { srv.Close() })
	c := NewClient(MustAllowlist("127.0.0.1"), 2*time.Second)
	resp, err := c.Get("http://" + ln2.Addr().String() + "/hook")
	if err != nil {
		t.Fatalf("GET: %v (a proxy from the environment was used?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || target.Load() != 0 {
		t.Fatalf("status %d, redirect target hit %d times", resp.StatusCode, target.Load())
	}
}

func TestRedactURL(t *testing.T) {
	if got := RedactURL("https://h.example/p?token=secret#frag"); got != "https://h.example/p?REDACTED" {
		t.Errorf("RedactURL = %q", got)
	}
	if got := RedactURL("https://h.example/p"); got != "https://h.example/p" {
		t.Errorf("RedactURL = %q", got)
	}
}
