package outbound

import (
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The guard is tested on addresses directly: no packet leaves the host.
func TestCheckAddrRefusesInternalAddresses(t *testing.T) {
	for _, addr := range []string{
		"169.254.169.254:80", "10.0.0.1:443", "172.16.0.1:443", "192.168.1.1:443",
		"127.0.0.1:443", "127.255.0.9:80", "100.64.0.1:443", "0.0.0.0:443", "224.0.0.1:443",
		"[::1]:443", "[fe80::1]:443", "[fc00::1]:443", "[fd12:3456::1]:443", "[::]:443",
		"[::ffff:127.0.0.1]:443", "[::ffff:10.0.0.1]:443", "[::ffff:169.254.169.254]:80",
		"[64:ff9b::7f00:1]:443", "[ff02::1]:443", "not-an-address",
	} {
		for _, network := range []string{"tcp", "tcp4", "tcp6"} {
			err := CheckAddr(network, addr, Allowlist{})
			if !IsRefused(err) {
				t.Errorf("CheckAddr(%s, %s) = %v, want a refusal", network, addr, err)
			} else if err.Error() != "refused by the outbound guard" {
				t.Errorf("refusal text %q says more than that the guard refused", err)
			}
		}
	}
	if err := CheckAddr("udp4", "8.8.8.8:53", Allowlist{}); !IsRefused(err) {
		t.Errorf("udp: %v, want a refusal", err)
	}
	for _, addr := range []string{"93.184.216.34:443", "8.8.8.8:8443", "[2606:4700::1111]:443", "[::ffff:8.8.8.8]:443"} {
		if err := CheckAddr("tcp", addr, Allowlist{}); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want nil", addr, err)
		}
	}
	allow := MustAllowlist("10.0.0.0/8", "127.0.0.1", "::1")
	for _, addr := range []string{"10.1.2.3:80", "127.0.0.1:9000", "[::ffff:127.0.0.1]:9000", "[::1]:80"} {
		if err := CheckAddr("tcp6", addr, allow); err != nil {
			t.Errorf("allowlisted CheckAddr(%s) = %v", addr, err)
		}
	}
	if err := CheckAddr("tcp4", "127.0.0.2:80", allow); !IsRefused(err) {
		t.Errorf("127.0.0.2 with 127.0.0.1 allowed: %v", err)
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
	for _, bad := range []string{"not a host", "10.0.0.0/99", "-bad-.example", "fe80::1%eth0", "2130706433", "0x7f000001"} {
		if _, err := ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("ParseAllowlist(%q) accepted", bad)
		}
	}
}

// Every form the audit used to reach loopback or metadata is refused when
// saved, including the encoded IPv4 forms inet_aton resolvers accept.
func TestCheckURL(t *testing.T) {
	allow := MustAllowlist("127.0.0.1", "prom.internal", "10.20.0.0/16")
	cases := []struct {
		url     string
		allow   Allowlist
		ok      bool
		refused bool // the error is the guard's refusal
	}{
		{"https://prom.example.com/", Allowlist{}, true, false},
		{"http://prom.example.com:9090", Allowlist{}, true, false},
		{"http://1.2.3.4:9090", Allowlist{}, true, false},
		{"ftp://prom.example.com/", Allowlist{}, false, false},
		{"https://user:pw@prom.example.com/", Allowlist{}, false, false},
		{"https:///nohost", Allowlist{}, false, false},
		{"http://prom.example.com:99999/", Allowlist{}, false, false},
		{"https://" + strings.Repeat("a", 2050) + ".com/", Allowlist{}, false, false},
		{"http://127.0.0.1:9090/", Allowlist{}, false, true},
		{"http://127.1:9090/", Allowlist{}, false, true},
		{"http://2130706433:9090/", Allowlist{}, false, true},
		{"http://0x7f000001/", Allowlist{}, false, true},
		{"http://0x7f.0.0.1/", Allowlist{}, false, true},
		{"http://0177.0.0.1/", Allowlist{}, false, true},
		{"http://017700000001/", Allowlist{}, false, true},
		{"http://169.254.169.254/latest/meta-data", Allowlist{}, false, true},
		{"http://[::ffff:169.254.169.254]/", Allowlist{}, false, true},
		{"http://[::ffff:7f00:1]/", Allowlist{}, false, true},
		{"http://[::1]:80/", Allowlist{}, false, true},
		{"http://[fe80::1%25eth0]/", Allowlist{}, false, true},
		{"http://0.0.0.0:8080/", Allowlist{}, false, true},
		{"http://10.0.0.1/", Allowlist{}, false, true},
		{"http://localhost:9090/", Allowlist{}, false, true},
		{"http://LOCALHOST./", Allowlist{}, false, true},
		{"http://api.localhost/", Allowlist{}, false, true},
		{"http://127.0.0.1:9090/", allow, true, false},
		{"http://prom.internal:9090/", allow, true, false},
		{"http://10.20.3.4/", allow, true, false},
		{"http://10.21.3.4/", allow, false, true},
	}
	for _, c := range cases {
		err := New(c.allow).CheckURL(c.url)
		if (err == nil) != c.ok {
			t.Errorf("CheckURL(%.60q) = %v, want ok=%v", c.url, err, c.ok)
		}
		if c.refused && !IsRefused(err) {
			t.Errorf("CheckURL(%.60q) = %v, want the guard's refusal", c.url, err)
		}
	}
	var g *Guard // a nil guard exempts nothing
	if !IsRefused(g.CheckHost("127.0.0.1")) || g.CheckHost("github.example.com") != nil {
		t.Error("nil guard")
	}
}

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

func listen(t *testing.T, network, addr string, h http.Handler) (*countingListener, string) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cl := &countingListener{Listener: ln}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return cl, port
}

// Without the allowlist, loopback is refused at dial time and no
// connection reaches the listener; the error says nothing but the refusal
// (no address, no port state). With it, the same request goes through.
func TestClientRefusesLoopbackAtDialTime(t *testing.T) {
	l, port := listen(t, "tcp4", "127.0.0.1:0", nil)
	client := New(Allowlist{}).Client(2 * time.Second)
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://localhost:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://127.1:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
	} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET %s succeeded", u)
			continue
		}
		if !IsRefused(err) {
			t.Errorf("GET %s: %v, want a refusal", u, err)
		}
		if msg := strings.ReplaceAll(err.Error(), u, ""); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "connection") {
			t.Errorf("GET %s: error %q tells more than the refusal", u, err)
		}
	}
	// A closed port is refused just the same: no port state.
	closed, _ := net.Listen("tcp4", "127.0.0.1:0")
	cport := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	_, err1 := client.Get("http://127.0.0.1:" + port + "/x")
	_, err2 := client.Get("http://127.0.0.1:" + strconv.Itoa(cport) + "/x")
	if !IsRefused(err1) || !IsRefused(err2) {
		t.Errorf("open %v / closed %v: want the same refusal", err1, err2)
	}
	if n := l.n.Load(); n != 0 {
		t.Fatalf("%d connections reached the listener", n)
	}
	allowed := New(MustAllowlist("127.0.0.1")).Client(2 * time.Second)
	resp, err := allowed.Get("http://127.0.0.1:" + port + "/")
	if err != nil {
		t.Fatalf("allowlisted GET: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || l.n.Load() != 1 {
		t.Fatalf("allowlisted GET: status %d, %d accepts", resp.StatusCode, l.n.Load())
	}
}

// A redirect from an allowed destination to an internal one is refused
// before any connection to the internal one is made; no proxy from the
// environment is used.
func TestClientRechecksRedirects(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	inner, innerPort := listen(t, "tcp6", "[::1]:0", nil)
	_, port := listen(t, "tcp4", "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/same" {
			w.WriteHeader(204)
			return
		}
		if r.URL.Path == "/local" {
			http.Redirect(w, r, "/same", http.StatusFound)
			return
		}
		http.Redirect(w, r, "http://[::1]:"+innerPort+"/", http.StatusFound)
	}))
	c := New(MustAllowlist("127.0.0.1")).Client(2 * time.Second)
	resp, err := c.Get("http://127.0.0.1:" + port + "/local")
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("redirect within the allowlist: %v", err)
	}
	resp.Body.Close()
	if _, err := c.Get("http://127.0.0.1:" + port + "/away"); !IsRefused(err) {
		t.Fatalf("redirect to [::1]: %v, want a refusal", err)
	}
	if inner.n.Load() != 0 {
		t.Fatal("the redirect target was contacted")
	}
	noRedirect := New(MustAllowlist("127.0.0.1")).ClientWith(Options{Timeout: time.Second, NoRedirects: true})
	resp, err = noRedirect.Get("http://127.0.0.1:" + port + "/local")
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("NoRedirects: %v", err)
	}
	resp.Body.Close()
}

// A name that passes the save-time check but resolves to loopback (the
// machine's own host name, an /etc/hosts entry) is refused when dialled.
func TestClientRefusesNamesResolvingInside(t *testing.T) {
	host, _ := os.Hostname()
	var name string
	for _, n := range []string{host, "ip6-localhost", "ip6-loopback"} {
		if n == "" || New(Allowlist{}).CheckHost(n) != nil {
			continue
		}
		addrs, err := net.LookupHost(n)
		if err != nil || len(addrs) == 0 {
			continue
		}
		if a, err := netip.ParseAddr(addrs[0]); err == nil && a.IsLoopback() {
			name = n
			break
		}
	}
	if name == "" {
		t.Skip("no host name other than localhost resolves to loopback here")
	}
	l, port := listen(t, "tcp", "127.0.0.1:0", nil)
	if err := New(Allowlist{}).CheckURL("http://" + name + ":" + port + "/"); err != nil {
		t.Fatalf("save-time check of %s: %v (names are judged when dialled)", name, err)
	}
	_, err := New(Allowlist{}).Client(2 * time.Second).Get("http://" + name + ":" + port + "/")
	if !IsRefused(err) || l.n.Load() != 0 {
		t.Fatalf("GET via %s: %v, %d connections", name, err, l.n.Load())
	}
}

// A name that does not resolve is refused like one that resolves inside,
// so the answer never tells which internal names exist nor names the
// resolver.
func TestClientUnresolvableNameIsARefusal(t *testing.T) {
	_, err := New(Allowlist{}).Client(5 * time.Second).Get("http://no-such-host.invalid:9090/")
	if !IsRefused(err) || strings.Contains(err.Error(), "lookup") || strings.Contains(err.Error(), ":53") {
		t.Fatalf("unresolvable name: %v, want only the guard's refusal", err)
	}
}

// Even within the allowlist, a failed connection says only that it failed:
// not whether the port refused or timed out.
func TestClientHidesWhyAConnectionFailed(t *testing.T) {
	closed, _ := net.Listen("tcp4", "127.0.0.1:0")
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	_, err := New(MustAllowlist("127.0.0.1")).Client(2 * time.Second).Get("http://127.0.0.1:" + strconv.Itoa(port) + "/")
	if err == nil || !strings.Contains(err.Error(), "could not connect") || strings.Contains(err.Error(), "refused") {
		t.Fatalf("closed allowlisted port: %v", err)
	}
}
