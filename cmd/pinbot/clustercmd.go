package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/partition"
)

// clusterPrefix is the etcd key prefix of pinbot's cluster (as the bot
// uses it: internal/app's default).
const clusterPrefix = "/pinbot/"

// clusterTimeout bounds the etcd reads of cluster status.
const clusterTimeout = 10 * time.Second

// clusterCommand serves "pinbot cluster status", what etcd says of the
// cluster, read without joining it, and "pinbot cluster import"
// (clusterimport.go).
func clusterCommand(st settings, args []string, stdout io.Writer) error {
	flags := newFlagSet("cluster")
	st.bind(flags, "cluster")
	if err := parseFlags(flags, "cluster", args, stdout); err != nil {
		return err
	}
	st.noteFlags(flags)
	if flags.NArg() > 0 && flags.Arg(0) == "import" {
		return clusterImportCommand(st, flags.Args()[1:], stdout)
	}
	if flags.NArg() != 1 || flags.Arg(0) != "status" {
		return &usageError{cmd: "cluster", err: errors.New("cluster: want the subcommand status or import")}
	}
	var endpoints []string
	for _, e := range strings.Split(st.etcdEndpoints.value, ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	if len(endpoints) == 0 {
		return &usageError{cmd: "cluster", err: fmt.Errorf("cluster status needs %s: the etcd cluster to read", st.etcdEndpoints.both())}
	}
	ecfg, err := st.etcdConfig()
	if err != nil {
		return &usageError{cmd: "cluster", err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := app.CheckEtcd(ctx, ecfg); err != nil {
		return fmt.Errorf("cluster status: %w", err)
	}
	cli, err := clientv3.New(ecfg)
	if err != nil {
		return fmt.Errorf("cluster status: etcd client: %w", err)
	}
	defer cli.Close()
	s, err := readClusterStatus(ctx, cli, partition.NewKeys(clusterPrefix))
	if err != nil {
		return fmt.Errorf("cluster status: %w (etcd at %s)", err, strings.Join(endpoints, ", "))
	}
	printClusterStatus(stdout, s)
	return nil
}

// clusterStatus is what cluster status shows.
type clusterStatus struct {
	settings clusterconf.Settings
	stored   bool
	members  []memberStatus
	// unowned are the partitions no member holds now.
	unowned int
	// strays count partitions held by a key whose member key is gone
	// (its lease about to expire).
	strays int
	// shards is the gateway shard count: the settings', or the one the
	// cluster stored from Discord's recommendation (0: none yet);
	// shardsUnowned and shardStrays count the shards as unowned and
	// strays count the partitions.
	shards, shardsUnowned, shardStrays int
}

type memberStatus struct {
	info cluster.MemberInfo
	// held and shards are the partitions and gateway shards it holds.
	held, shards int
}

// readClusterStatus reads the settings, member keys and owner keys under
// keys at one etcd revision.
func readClusterStatus(ctx context.Context, cli *clientv3.Client, keys partition.Keys) (clusterStatus, error) {
	var s clusterStatus
	resp, err := cli.Txn(ctx).Then(
		clientv3.OpGet(keys.Settings()),
		clientv3.OpGet(keys.Members(), clientv3.WithPrefix()),
		clientv3.OpGet(keys.Owners(), clientv3.WithPrefix()),
		clientv3.OpGet(keys.ShardCount()),
	).Commit()
	if err != nil {
		return s, err
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		if err := json.Unmarshal(kvs[0].Value, &s.settings); err != nil {
			return s, fmt.Errorf("the cluster's settings are unreadable: %w", err)
		}
		s.stored = true
	}
	byID := map[string]*memberStatus{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var info cluster.MemberInfo
		if err := json.Unmarshal(kv.Value, &info); err != nil {
			return s, fmt.Errorf("member key %s is unreadable: %w", kv.Key, err)
		}
		info.ID = strings.TrimPrefix(string(kv.Key), keys.Members())
		s.members = append(s.members, memberStatus{info: info})
	}
	for i := range s.members {
		byID[s.members[i].info.ID] = &s.members[i]
	}
	s.shards = s.settings.Shards
	if kvs := resp.Responses[3].GetResponseRange().Kvs; s.shards == 0 && len(kvs) == 1 {
		s.shards, _ = strconv.Atoi(string(kvs[0].Value))
	}
	owned, shardsOwned := 0, 0
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		m := byID[string(kv.Value)]
		if strings.HasPrefix(string(kv.Key), keys.ShardOwners()) {
			shardsOwned++
			if m != nil {
				m.shards++
			} else {
				s.shardStrays++
			}
			continue
		}
		owned++
		if m != nil {
			m.held++
		} else {
			s.strays++
		}
	}
	if s.stored {
		s.unowned = max(s.settings.Partitions-owned, 0)
		s.shardsUnowned = max(s.shards-shardsOwned, 0)
	}
	slices.SortFunc(s.members, func(a, b memberStatus) int { return strings.Compare(a.info.ID, b.info.ID) })
	return s, nil
}

func printClusterStatus(w io.Writer, s clusterStatus) {
	if !s.stored {
		fmt.Fprintln(w, "No pinbot cluster in this etcd: no member has started.")
		return
	}
	st := s.settings
	shards := "gateway shards: Discord's recommendation, not asked yet"
	if s.shards > 0 {
		shards = fmt.Sprintf("%d gateway shards", s.shards)
	}
	fmt.Fprintf(w, "Settings: %d partitions, %d pins per %s, lease %s, %s\n",
		st.Partitions, st.Limit, windowNoun(st.Window), st.Lease, shards)
	fmt.Fprintf(w, "Members: %d\n", len(s.members))
	if len(s.members) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
		fmt.Fprintf(tw, "MEMBER\tADDRESS\tSTARTED\tPARTITIONS\tSHARDS\n")
		for _, m := range s.members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", m.info.ID, m.info.Addr, m.info.Started.UTC().Format(time.RFC3339), m.held, m.shards)
		}
		tw.Flush()
	}
	switch {
	case s.unowned == 0 && s.strays == 0:
		fmt.Fprintln(w, "Every partition has an owner.")
	default:
		if s.unowned > 0 {
			fmt.Fprintf(w, "%d partitions have no owner: their accounts wait for a member to take them.\n", s.unowned)
		}
		if s.strays > 0 {
			fmt.Fprintf(w, "%d partitions are held by a member that is gone: they move once its lease expires.\n", s.strays)
		}
	}
	switch {
	case s.shards == 0:
	case s.shardsUnowned == 0 && s.shardStrays == 0:
		fmt.Fprintln(w, "Every gateway shard is open on a member.")
	default:
		if s.shardsUnowned > 0 {
			fmt.Fprintf(w, "%d gateway shards have no owner: their guilds' commands get no answer until a member opens them.\n", s.shardsUnowned)
		}
		if s.shardStrays > 0 {
			fmt.Fprintf(w, "%d gateway shards are held by a member that is gone: they reopen elsewhere once its lease expires.\n", s.shardStrays)
		}
	}
}
