//go:build freebsd || netbsd || openbsd || dragonfly

package bench

// kernelRelease and fsType are not read on the BSDs; the report says so.
func kernelRelease() string { return "" }

func fsType(string) string { return "an unreported filesystem" }
