package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"
)

// EngineStore is the engine's store as a backup reads it. Package
// internal/app opens pinbot's.
type EngineStore interface {
	// HighWater returns the stored high-water mark, which the header
	// records.
	HighWater(ctx context.Context) (int64, error)
	// Backup writes the store, read at one instant while writes go on,
	// to w, in the form Loaders.Engine loads.
	Backup(w io.Writer) (uint64, error)
}

// LinksStore is the token store as a backup reads it. Package
// internal/app opens pinbot's.
type LinksStore interface {
	// Backup writes the store, read at one instant, to w, in the form
	// Loaders.Links loads.
	Backup(w io.Writer) error
}

// Stores are the databases a backup copies.
type Stores struct {
	// Engine is the engine's store.
	Engine EngineStore
	// Links is the token store; nil when the data directory has none.
	// Its section is the store's own Backup, which Restore loads with
	// Loaders.Links.
	Links LinksStore
	// Key is the token store's key (16, 24 or 32 bytes), from which the
	// key encrypting its copy is derived; required with Links.
	Key []byte
}

// Take writes a backup of st to w and returns what it wrote. The stores
// may be in use (online says so in the header): each is read at one
// instant, the engine's store first, then the token store.
func Take(w io.Writer, st Stores, online bool) (Info, error) {
	if st.Engine == nil {
		return Info{}, errors.New("backup: no engine store")
	}
	if st.Links != nil {
		switch len(st.Key) {
		case 16, 24, 32:
		default:
			return Info{}, fmt.Errorf("backup: the token store's key is %d bytes, want 16, 24 or 32", len(st.Key))
		}
	}
	hw, err := st.Engine.HighWater(context.Background())
	if err != nil {
		return Info{}, fmt.Errorf("backup: %w", err)
	}
	h := Header{Created: time.Now().UTC(), Pinbot: Version(), Online: online, HighWater: hw}
	bw, err := NewWriter(w, h)
	if err != nil {
		return Info{}, err
	}
	info := Info{Header: h, Version: formatVersion}
	sec, err := bw.Section(Engine, nil)
	if err != nil {
		return Info{}, err
	}
	if _, err := st.Engine.Backup(sec); err != nil {
		return Info{}, fmt.Errorf("backup: the engine store: %w", err)
	}
	if err := sec.Close(); err != nil {
		return Info{}, err
	}
	info.Sections = append(info.Sections, SectionInfo{Kind: Engine, Size: sec.Size()})
	if st.Links != nil {
		sec, err := bw.Section(Links, st.Key)
		if err != nil {
			return Info{}, err
		}
		if err := st.Links.Backup(sec); err != nil {
			return Info{}, fmt.Errorf("backup: the token store: %w", err)
		}
		if err := sec.Close(); err != nil {
			return Info{}, err
		}
		info.Sections = append(info.Sections, SectionInfo{Kind: Links, Encrypted: true, Size: sec.Size()})
	}
	if err := bw.Close(); err != nil {
		return Info{}, err
	}
	info.Size = bw.Written()
	return info, nil
}

// Version returns the version of this pinbot: its module version and
// the commit it was built from, when the build recorded them.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
