package breaker

// SetDown opens or closes b, as its watcher would.
func SetDown(b *Breaker, down bool) { b.set(down) }
