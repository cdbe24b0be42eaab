package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pinbot/pinbot/internal/backup"
)

// maxAnswer bounds the answer read from the control socket: a listing of
// millions of accounts fits.
const maxAnswer = 1 << 30

// FetchAccounts asks the pinbot serving the control socket at path for
// the listing of its accounts. Nobody answering there fails with an
// error wrapping backup.ErrNotServing.
func FetchAccounts(ctx context.Context, path string) (Accounts, error) {
	var list Accounts
	err := fetch(ctx, path, AccountsPath, &list)
	return list, err
}

// FetchJobs asks the pinbot serving the control socket at path for the
// queue of the account ref names (see ReadJobs). Nobody answering there
// fails with an error wrapping backup.ErrNotServing; an account it does
// not know, with one wrapping ErrUnknownAccount.
func FetchJobs(ctx context.Context, path, ref string) (Jobs, error) {
	var jobs Jobs
	err := fetch(ctx, path, jobsTarget(ref), &jobs)
	return jobs, err
}

// fetch gets target from the control socket at path into v. The
// running pinbot's own errors come back with their text alone, as
// ReadAccounts and ReadJobs return them here.
func fetch(ctx context.Context, path, target string, v any) error {
	resp, err := backup.Get(ctx, path, target)
	if err != nil {
		if errors.Is(err, backup.ErrNotServing) {
			return err
		}
		return fmt.Errorf("asking the running pinbot: %w", err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxAnswer)
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		raw, _ := io.ReadAll(io.LimitReader(body, 1<<12))
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			// Not this package's answer: a pinbot from before the
			// listings, which answers 404 to them.
			return fmt.Errorf("the running pinbot answered %s to %s: %s (a version without this listing? stop it or upgrade it)",
				resp.Status, target, strings.TrimSpace(string(raw)))
		}
		if resp.StatusCode == http.StatusNotFound {
			return &kindError{msg: e.Error, kind: ErrUnknownAccount}
		}
		return errors.New(e.Error)
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("reading the running pinbot's answer: %w", err)
	}
	return nil
}
