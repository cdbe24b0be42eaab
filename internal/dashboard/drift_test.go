package dashboard

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// driftAt is when the fixture's drifts were measured: five minutes
// before the fixture's end.
var driftAt = monday.Add(4*time.Hour + 25*time.Minute)

// fixtureDrifts are the reconciler's last findings on the fixture's
// accounts (none on acct-dave), and on acct-zed, which pinbot barely
// uses but whose owner pins elsewhere.
var fixtureDrifts = map[string]Drift{
	"acct-alice-art":  {Pinterest: 98, Counted: 98},
	"acct-bob-photos": {Pinterest: 76, Counted: 75, Drift: 1, Unexplained: 1},
	"acct-carol":      {Pinterest: 39, Counted: 41, Drift: -2},
	"acct-erin":       {Pinterest: 3, Counted: 3, Elsewhere: 4},
	"acct-zed":        {Pinterest: 60, Counted: 55, Pending: 5, Drift: 5},
}

// fixtureDrift is the DriftReader of the fixture.
type fixtureDrift struct{}

func (fixtureDrift) Drift(account string) (Drift, bool) {
	d, ok := fixtureDrifts[account]
	d.Account, d.At = account, driftAt
	return d, ok
}

func (fixtureDrift) Largest(n int) []Drift {
	var out []Drift
	for a := range fixtureDrifts {
		if d, _ := (fixtureDrift{}).Drift(a); d.Drift != 0 {
			out = append(out, d)
		}
	}
	abs := func(x int) int { return max(x, -x) }
	slices.SortFunc(out, func(a, b Drift) int { return cmp.Compare(abs(b.Drift), abs(a.Drift)) })
	return out[:min(n, len(out))]
}

// TestDriftColumn: with the reconciler's drifts, the busiest accounts
// show theirs in a column (a dash where none was measured, the pins made
// elsewhere that pinbot does not count beside), and a card lists the
// largest drifts, named, with what each compares; the JSON carries them.
// Without them there is neither column nor card.
func TestDriftColumn(t *testing.T) {
	f := newFixture(t)
	html := body(t, get(t, f.dash.Mount(http404()), "GET", Path, "Bearer "+testToken))
	for _, w := range []string{
		`<th scope="col" class="num">Drift</th>`,
		`<td class="num driftcol"><span class="drift zero" title="Pinterest lists 98, pinbot counts 98">0</span></td>`,
		`<td class="num driftcol"><span class="drift bad" title="Pinterest lists 76, pinbot counts 75">&#43;1</span></td>`, // html/template escapes "+"
		`<td class="num driftcol"><span class="drift neg" title="Pinterest lists 39, pinbot counts 41">−2</span></td>`,
		`<td class="num driftcol"><span class="note">–</span></td>`,
		`<td class="num driftcol"><span class="drift zero" title="Pinterest lists 3, pinbot counts 3">0</span> <span class="note">4 made elsewhere</span></td>`,
		`<section class="card" id="drift">`,
		`<td class="account"><span class="id">acct-zed</span></td><td class="num">60</td><td class="num">55</td><td class="num">5</td><td class="num">0</td><td class="num"><span class="drift pos" title="Pinterest lists 60, pinbot counts 55 and 5 pending">&#43;5</span></td>`,
		`<span class="note">1 unexplained</span>`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("the page lacks %s", w)
		}
	}
	// Largest first; bob's account is named.
	card := html[strings.Index(html, `id="drift"`):]
	if z, c, b := strings.Index(card, "acct-zed"), strings.Index(card, "acct-carol"), strings.Index(card, "@bob_photos"); z < 0 || c < z || b < c {
		t.Errorf("the drift card's order: zed %d, carol %d, bob %d", z, c, b)
	}

	var d Data
	if err := json.NewDecoder(get(t, f.dash.Mount(http404()), "GET", DataPath, "Bearer "+testToken).Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !d.Reconciled || d.Busiest[1].Drift == nil || d.Busiest[1].Drift.Unexplained != 1 || d.Busiest[3].Drift != nil ||
		len(d.Drifted) != 3 || d.Drifted[0].Account != "acct-zed" || d.Drifted[2].Username != "bob_photos" {
		t.Errorf("data: reconciled %v, busiest %+v, drifted %+v", d.Reconciled, d.Busiest, d.Drifted)
	}

	plain, err := New(Config{Token: []byte(testToken), Engine: f.eng, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	html = body(t, get(t, plain.Mount(http404()), "GET", Path, "Bearer "+testToken))
	if strings.Contains(html, ">Drift</th>") || strings.Contains(html, `id="drift"`) {
		t.Error("a drift column or card without the reconciler's drifts")
	}
}
