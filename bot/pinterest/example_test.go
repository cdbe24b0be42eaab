package pinterest_test

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

func ExampleClient_AuthCodeURL() {
	c, err := pinterest.New(pinterest.Config{
		ClientID:     "1234",
		ClientSecret: "secret",
		RedirectURL:  "https://bot.example/cb",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.AuthCodeURL("xyz"))
	// Output:
	// https://www.pinterest.com/oauth/?client_id=1234&redirect_uri=https%3A%2F%2Fbot.example%2Fcb&response_type=code&scope=boards%3Aread%2Cboards%3Awrite%2Cpins%3Aread%2Cpins%3Awrite%2Cuser_accounts%3Aread&state=xyz
}

func ExampleClient_CreatePin() {
	srv := pinteresttest.NewServer()
	defer srv.Close()
	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "549755885175", Name: "Cats"})
	srv.Inject(pinteresttest.ServerError(pinteresttest.PathPins, 503))

	c, err := pinterest.New(pinterest.Config{
		ClientID:     srv.ClientID(),
		ClientSecret: srv.ClientSecret(),
		RedirectURL:  "https://bot.example/cb",
		APIBase:      srv.APIBase(),
		AuthURL:      srv.AuthURL(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The saver would write the rotated token to the database.
	save := func(ctx context.Context, tok *oauth2.Token) error { return nil }
	s, err := pinterest.NewSession(cred.Token(), save)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := pinterest.PinRequest{BoardID: "549755885175", ImageURL: "https://cdn.example/cat.png", Title: "A cat"}

	ctx := context.Background()
	_, err = c.CreatePin(ctx, s, req)
	fmt.Println("outcome unknown:", errors.Is(err, pinterest.ErrOutcomeUnknown))

	pin, err := c.CreatePin(ctx, s, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pin.Title, pin.URL)
	// Output:
	// outcome unknown: true
	// A cat https://www.pinterest.com/pin/1000000000000000001/
}
