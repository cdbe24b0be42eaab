package discordio

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	in := `Post "http://127.0.0.1:1/api/v10/interactions/123/aW50ZXJhY3Rpb246abc/callback": EOF; PATCH /webhooks/456/secretTOKEN/messages/@original` +
		` {"content":"<https://www.pinterest.com/oauth/?client_id=1\u0026state=S3cr3tState\u0026x=1>"} cb?code=C0de&state=Other`
	out := redact(in)
	for _, secret := range []string{"aW50ZXJhY3Rpb246abc", "secretTOKEN", "S3cr3tState", "C0de", "Other"} {
		if strings.Contains(out, secret) {
			t.Fatalf("redact left %q in %q", secret, out)
		}
	}
	if !strings.Contains(out, "/interactions/123/<redacted>/callback") || !strings.Contains(out, "/webhooks/456/<redacted>/messages") {
		t.Fatalf("redact(%q) = %q", in, out)
	}

	// Gateway payloads as disgo logs them at debug level, plain and quoted
	// inside another JSON string, and an Authorization header.
	for _, in := range []string{
		`{"op":2,"d":{"token":"MTIzNDU2.Gx.BotSecret","intents":1}}`,
		`{"data":"{\"t\":\"INTERACTION_CREATE\",\"d\":{\"token\": \"aW50ZXJhY3Rpb246BotSecret\"}}"}`,
		`Authorization: Bot MTIzNDU2.Gx.BotSecret`,
	} {
		if out := redact(in); strings.Contains(out, "BotSecret") || !strings.Contains(out, "<redacted>") {
			t.Errorf("redact(%q) = %q", in, out)
		}
	}
}
