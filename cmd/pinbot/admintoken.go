package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unicode"
)

// minAdminToken is the shortest admin token accepted, in bytes: the
// dashboard is on the public listener.
const minAdminToken = 16

// adminTokenHelp says how to make a token.
const adminTokenHelp = "create one with: head -c 24 /dev/urandom | base64 > admin.token && chmod 600 admin.token"

// readAdminToken reads the operator dashboard's token from the file the
// setting names: the file's content without its trailing line break, at
// least minAdminToken bytes of printable characters without spaces (it
// travels in an HTTP header). Like the key file, the file must be
// neither readable nor writable by its group or others: whoever reads
// the token reads the dashboard. Its errors name the setting, never the
// token.
func readAdminToken(s *setting) ([]byte, error) {
	path := s.value
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: token file %s does not exist; %s", s.name(), path, adminTokenHelp)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", s.name(), err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %s is not a regular file", s.name(), path)
	}
	if err := ownerOnly(s, "token file", path, fi.Mode()); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name(), err)
	}
	token := bytes.TrimRight(b, "\r\n")
	switch {
	case len(token) == 0:
		return nil, fmt.Errorf("%s: token file %s is empty; %s", s.name(), path, adminTokenHelp)
	case bytes.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return nil, fmt.Errorf("%s: token file %s holds spaces, line breaks or control characters within the token; "+
			"it must be one line of printable characters", s.name(), path)
	case len(token) < minAdminToken:
		return nil, fmt.Errorf("%s: the token in %s is %d bytes long; want at least %d; %s",
			s.name(), path, len(token), minAdminToken, adminTokenHelp)
	}
	return token, nil
}
