# make release: the same builds as goreleaser.yaml without goreleaser
# (static CGO_ENABLED=0 binaries for linux and darwin on amd64 and arm64,
# version/commit/date by ldflags, archives and SHA256SUMS in dist/).
#
#   make build                        ./rootcause for this machine
#   make release                      every platform
#   make release PLATFORMS=linux/amd64
#   make release VERSION=1.4.0

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo none)
DATE      ?= $(shell git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST      ?= dist
GO        ?= go
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build release clean test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o rootcause .

release:
	rm -rf $(DIST) && mkdir -p $(DIST)
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=rootcause_$(VERSION)_$${os}_$${arch}; \
		mkdir -p $(DIST)/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$$name/rootcause . ; \
		cp LICENSE README.md $(DIST)/$$name/; mkdir -p $(DIST)/$$name/docs $(DIST)/$$name/packaging; \
		cp docs/*.md server/openapi.json $(DIST)/$$name/docs/; cp packaging/rootcause.service packaging/rootcause.example.yaml $(DIST)/$$name/packaging/; \
		tar -C $(DIST) -czf $(DIST)/$$name.tar.gz $$name; rm -rf $(DIST)/$$name; \
	done
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS

test:
	$(GO) test ./...

clean:
	rm -rf $(DIST) rootcause
