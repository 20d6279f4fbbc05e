package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A page served over HTTPS whose stylesheets and scripts it references
// with http:// URLs: browsers block that mixed content (images are
// upgraded, scripts and stylesheets are not), so the page shows as plain
// text and nothing interactive works, while every server answers 200 and
// the CDN serves the assets fine over HTTPS. The usual origin is the
// scheme the application believes it is served with: it builds absolute
// URLs from the request, and behind a proxy that terminates TLS the
// request reaches it as plain HTTP; unless the proxy in between passes
// X-Forwarded-Proto: https (ingress-nginx passes the client's own only
// with use-forwarded-headers) and the app trusts it, the app emits
// http://. Moving TLS termination (to a cloud load balancer, a CDN) is the
// typical trigger; the release beside it is innocent.

// KindMixedContent is an HTTPS page referencing its assets over http://.
const KindMixedContent Kind = "mixed_content"

var (
	// mixedConsoleRE is the browser's report: Chrome's "Mixed Content:
	// The page at 'https://...' was loaded over HTTPS, but requested an
	// insecure stylesheet 'http://...'", Firefox's "Blocked loading mixed
	// active content “http://...”".
	mixedConsoleRE = regexp.MustCompile(`(?i)Mixed Content: The page at '[^']+' was loaded over HTTPS, but requested an insecure (?:stylesheet|script|resource|font|frame)[^']*'(http://[^']+)'|Blocked loading mixed (?:active )?content [“"](http://[^”"]+)`)
	// mixedAssetRE is an asset a page references over http://: a
	// stylesheet link, a script, a module preload.
	mixedAssetRE = regexp.MustCompile(`(?i)<(?:link|script)\b[^>]*\b(?:href|src)=["'](http://[^"']+\.(?:css|js|mjs)(?:\?[^"']*)?)["']`)
	// mixedPageRE is a curl of a page over HTTPS.
	mixedPageRE = regexp.MustCompile(`(?i)\bcurl\b.*\b(https://[^\s'"|]+)`)
	// mixedChangeRE is a change of where TLS ends or what the proxies
	// pass: TLS offload, a load balancer's certificate, forwarded headers.
	// mixedForwardedOffRE is ingress-nginx told not to pass on the
	// client's forwarded headers.
	mixedForwardedOffRE = regexp.MustCompile(`(?i)use-forwarded-headers["']?\s*[:=]\s*["']?false`)
	mixedChangeRE       = regexp.MustCompile(`(?i)\btls\b|\bssl\b|offload|terminat|x-forwarded|forwarded[- ]headers|trusted? prox|\bnlb\b|\balb\b|\belb\b|load balancer|https`)
)

var mixedContent = &mechanism{
	kind:           KindMixedContent,
	class:          classCause,
	label:          "an HTTPS page referencing its assets over http:// (mixed content blocked)",
	detect:         detectMixedContent,
	fitsChange:     changeSays(mixedChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's pages are served over HTTPS but reference their stylesheets and scripts with http:// URLs (%s): browsers block that mixed content as insecure, so pages render without styles and scripts, while every server, the CDN included, answers 200", h.Subject, orWord(h.fact("asset"), "its assets"))
		d += h.quoteClause("; ", "line", 200)
		d += fmt.Sprintf(". %s builds absolute URLs from the scheme each request reaches it with: where TLS is terminated in front of it (a load balancer, the ingress) the request arrives as plain HTTP, and unless the proxy in between passes X-Forwarded-Proto: https and the app trusts it, the app believes it is served over http", h.Subject)
		if h.fact("forwarded_off") != "" {
			d += "; the ingress does not pass on the client's forwarded headers (use-forwarded-headers false)"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make the requests reach %s as HTTPS: have the proxy in front of it pass X-Forwarded-Proto: https (ingress-nginx: use-forwarded-headers, or a fixed header when TLS ends at the load balancer) and trust that proxy in the app, or force the https scheme for generated URLs; or roll back the change that moved TLS termination", h.Subject)
		r.med("Serve asset URLs scheme-relative or from a configured https base (ASSET_URL, assetPrefix) so they never follow the request's scheme")
		r.low("Check the page source for http:// assets after any change of TLS termination, and alert on mixed-content or CSP reports")
	},
}

// detectMixedContent reads page sources fetched over HTTPS that reference
// their stylesheets or scripts over http://, and browsers' mixed-content
// reports.
func detectMixedContent(ev *Gathered, _ []Finding) []Finding {
	var asset, line, page string
	forwardedOff := false
	for _, c := range ev.Commands {
		m := findSubmatch(mixedPageRE, c.Command)
		for _, l := range c.Lines {
			if matchLine(mixedForwardedOffRE, l) {
				forwardedOff = true
			}
			if m == nil || asset != "" {
				continue
			}
			if a := findSubmatch(mixedAssetRE, l); a != nil {
				asset, line, page = a[1], strings.TrimSpace(l), m[1]
			}
		}
	}
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if l := templateLine(t, mixedConsoleRE); l != "" && asset == "" {
				asset, line = firstGroup(findSubmatch(mixedConsoleRE, l)), strings.TrimSpace(l)
			}
		}
	}
	if asset == "" {
		return nil
	}
	subject := ev.Scope.Service
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindMixedContent, Subject: subject, Namespace: ev.Scope.Namespace, Object: "page " + orWord(page, subject),
		Time: untimedOnset(ev, mixedChangeRE), Severity: SevCritical, Weight: 0.88, Source: SrcKubernetes}
	f.setFact("asset", asset)
	f.setFact("line", line)
	if forwardedOff {
		f.setFact("forwarded_off", "true")
	}
	if page != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the page %s, fetched over HTTPS, references %s over http://: %s", page, asset, quote(line, 200)))
	} else {
		f.Evidence = append(f.Evidence, "the browser blocks mixed content: "+quote(ReadableLine(line), 220))
	}
	f.Summary = fmt.Sprintf("%s's HTTPS pages load %s over http:// (mixed content blocked)", subject, asset)
	return []Finding{f}
}
