package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/rs/zerolog"
)

// Paths of the listings on the control socket.
const (
	AccountsPath = "/accounts"
	JobsPath     = "/jobs"
)

// Handler serves the listings of src on AccountsPath and JobsPath (see
// the package documentation): mount it on the control socket for both.
func Handler(src Source, log zerolog.Logger) http.Handler {
	src.Log = log
	log = log.With().Str("component", "control").Logger()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+AccountsPath, func(w http.ResponseWriter, r *http.Request) {
		list, err := ReadAccounts(r.Context(), src)
		if err != nil {
			log.Error().Err(err).Msg("listing the accounts failed")
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		log.Debug().Int("accounts", len(list.Accounts)).Msg("accounts listed")
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("GET "+JobsPath, func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Query().Get("account")
		if ref == "" {
			writeError(w, http.StatusBadRequest, errors.New("no account given"))
			return
		}
		jobs, err := ReadJobs(r.Context(), src, ref)
		switch {
		case errors.Is(err, ErrUnknownAccount):
			writeError(w, http.StatusNotFound, err)
			return
		case err != nil:
			log.Error().Err(err).Str("account", ref).Msg("listing an account's queue failed")
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		log.Debug().Str("account", jobs.Account.ID).Int("jobs", len(jobs.Jobs)).Msg("queue listed")
		writeJSON(w, http.StatusOK, jobs)
	})
	return mux
}

// jobsTarget is the request for the queue of the account ref names.
func jobsTarget(ref string) string {
	return JobsPath + "?" + url.Values{"account": {ref}}.Encode()
}

// errorBody is the answer to a request that failed.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone is no news
}
