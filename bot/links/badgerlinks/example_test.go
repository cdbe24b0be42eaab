package badgerlinks_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
)

func Example() {
	ctx := context.Background()
	st, err := badgerlinks.Open("", badgerlinks.Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	// /link by Discord user 42: a state for the authorization URL.
	state, err := st.NewState(ctx, "42", now)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The OAuth callback, a minute later.
	user, err := st.ConsumeState(ctx, state, now.Add(time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	tok := &oauth2.Token{AccessToken: "pina_…", RefreshToken: "pinr_…"}
	if err := st.Link(ctx, user, links.Account{ID: "1001", Username: "alice"}, tok); err != nil {
		fmt.Println(err)
		return
	}
	u, err := st.User(ctx, "42")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("active:", u.Active, "linked:", u.Accounts)

	// A state works once.
	_, err = st.ConsumeState(ctx, state, now.Add(time.Minute))
	fmt.Println("replay refused:", errors.Is(err, links.ErrStateInvalid))

	// Nobody can switch to an account they have not linked.
	err = st.SetActive(ctx, "43", "1001")
	fmt.Println("switch refused:", errors.Is(err, links.ErrNotLinked))
	// Output:
	// active: 1001 linked: [1001]
	// replay refused: true
	// switch refused: true
}
