//go:build !linux

package actors

var elapsed = fallbackElapsed
