// Package control gives an operator two listings of a data directory:
// every stored account with its pin count, and one account's queue. A
// running pinbot serves them on its control socket (DIR/pinbot.sock,
// beside the online backups of package internal/backup), since its
// stores admit no other process; when none runs, the command reads them
// from the stores itself. Either way the listing is the same data, read
// by the same functions (ReadAccounts, ReadJobs), so the command that
// shows it writes the same output whether the bot runs or not.
//
//	GET /accounts              Accounts, as JSON
//	GET /jobs?account=ID       Jobs of the account ID, as JSON
//	GET /jobs?account=@NAME    Jobs of the account whose username is NAME
//
// An error is answered with a JSON object {"error": "..."}: 404 for an
// account that is neither stored nor linked, 400 for a request without
// an account, 500 otherwise.
//
// The counts are read with actors.Engine.Peek, as the dashboard's survey
// reads them: a listing of every account neither spawns account actors
// in a running engine nor keeps idle ones in memory. A queue is read
// with actors.Engine.Jobs, which gives the start time the engine will
// start each waiting job at.
//
// # Usage
//
//	// The running pinbot, on its control socket:
//	mux.Handle(control.AccountsPath, control.Handler(src, log))
//	mux.Handle(control.JobsPath, control.Handler(src, log))
//
//	// The command:
//	list, err := control.FetchAccounts(ctx, socket)
//	if errors.Is(err, backup.ErrNotServing) {
//		list, err = control.ReadAccounts(ctx, src) // the stores, opened here
//	}
package control
