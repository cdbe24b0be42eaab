package codec

import (
	"encoding/binary"

	"github.com/pinbot/pinbot/persistence"
)

// AppendRules appends the encoding of the engine's rules r to dst.
func AppendRules(dst []byte, r persistence.Rules) []byte {
	start := len(dst)
	dst = append(dst, formatRulesV1)
	dst = appendRule(dst, r.Current)
	dst = binary.AppendVarint(dst, r.Lease)
	dst = binary.AppendUvarint(dst, uint64(len(r.Earlier)))
	for _, e := range r.Earlier {
		dst = appendRule(dst, e)
	}
	return appendChecksum(dst, start)
}

func appendRule(dst []byte, r persistence.Rule) []byte {
	dst = binary.AppendVarint(dst, int64(r.Limit))
	dst = binary.AppendVarint(dst, r.Window)
	return binary.AppendVarint(dst, r.Until)
}

// DecodeRules decodes a value written by AppendRules. Any malformed input
// yields an error wrapping persistence.ErrCorrupt.
func DecodeRules(b []byte) (persistence.Rules, error) {
	body, err := checkFrame(b, formatRulesV1)
	if err != nil {
		return persistence.Rules{}, err
	}
	d := decoder{b: body}
	var r persistence.Rules
	r.Current = d.rule()
	r.Lease = d.varint("lease")
	if n := d.count("earlier rules", 3); n > 0 {
		r.Earlier = make([]persistence.Rule, n)
		for i := range r.Earlier {
			r.Earlier[i] = d.rule()
		}
	}
	if err := d.finish(); err != nil {
		return persistence.Rules{}, err
	}
	return r, nil
}

func (d *decoder) rule() persistence.Rule {
	limit := d.varint("rule limit")
	if int64(int(limit)) != limit {
		d.fail("rule limit")
	}
	return persistence.Rule{Limit: int(limit), Window: d.varint("rule window"), Until: d.varint("rule end")}
}
