package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// AppendRules appends the encoding of the engine's rules r to dst: format
// V2 when a rule has a From, else V1.
func AppendRules(dst []byte, r persistence.Rules) []byte {
	start := len(dst)
	v2 := hasFrom(r)
	if v2 {
		dst = append(dst, formatRulesV2)
	} else {
		dst = append(dst, formatRulesV1)
	}
	dst = appendRule(dst, r.Current, v2)
	dst = binary.AppendVarint(dst, r.Lease)
	dst = binary.AppendUvarint(dst, uint64(len(r.Earlier)))
	for _, e := range r.Earlier {
		dst = appendRule(dst, e, v2)
	}
	return appendChecksum(dst, start)
}

// hasFrom reports whether a rule of r has a From.
func hasFrom(r persistence.Rules) bool {
	if r.Current.From != 0 {
		return true
	}
	for _, e := range r.Earlier {
		if e.From != 0 {
			return true
		}
	}
	return false
}

func appendRule(dst []byte, r persistence.Rule, from bool) []byte {
	dst = binary.AppendVarint(dst, int64(r.Limit))
	dst = binary.AppendVarint(dst, r.Window)
	dst = binary.AppendVarint(dst, r.Until)
	if from {
		dst = binary.AppendVarint(dst, r.From)
	}
	return dst
}

// DecodeRules decodes a value written by AppendRules, in either format.
// Any malformed input yields an error wrapping persistence.ErrCorrupt.
func DecodeRules(b []byte) (persistence.Rules, error) {
	format := formatRulesV1
	if len(b) > 0 && b[0] == formatRulesV2 {
		format = formatRulesV2
	}
	body, err := checkFrame(b, format)
	if err != nil {
		return persistence.Rules{}, err
	}
	v2 := format == formatRulesV2
	d := decoder{b: body}
	var r persistence.Rules
	r.Current = d.rule(v2)
	r.Lease = d.varint("lease")
	minLen := 3
	if v2 {
		minLen = 4
	}
	if n := d.count("earlier rules", minLen); n > 0 {
		r.Earlier = make([]persistence.Rule, n)
		for i := range r.Earlier {
			r.Earlier[i] = d.rule(v2)
		}
	}
	if v2 && d.err == nil && !hasFrom(r) {
		// Written as V1 when no rule has a From: one encoding per value.
		d.fail("rules format: no rule has a start")
	}
	if err := d.finish(); err != nil {
		return persistence.Rules{}, err
	}
	return r, nil
}

func (d *decoder) rule(from bool) persistence.Rule {
	limit := d.varint("rule limit")
	if int64(int(limit)) != limit {
		d.fail("rule limit")
	}
	r := persistence.Rule{Limit: int(limit), Window: d.varint("rule window"), Until: d.varint("rule end")}
	if from {
		r.From = d.varint("rule start")
	}
	return r
}
