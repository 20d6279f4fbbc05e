package kubetext

import "time"

type parser struct {
	ref time.Time
	res Result
}

func newParser(ref time.Time) *parser { return &parser{ref: ref} }

func (p *parser) run(data []byte) {}

func (p *parser) result() *Result { return &p.res }
