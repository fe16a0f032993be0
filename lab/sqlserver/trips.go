package sqlserver

import (
	"net"
	"sync"
	"sync/atomic"
)

// Trips is a TCP proxy in front of a server that counts round trips: each
// time a client speaks after the server did, or first, is one. A client
// that pipelines — sends several statements, then reads their replies —
// makes one.
type Trips struct {
	Addr string // where clients connect instead: 127.0.0.1:port
	n    atomic.Int64
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool // the clients' connections, closed by Close
}

// CountTrips starts a proxy to the server at target (host:port).
func CountTrips(target string) (*Trips, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Trips{Addr: ln.Addr().String(), ln: ln, open: map[net.Conn]bool{}}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.open[c] = true
			p.mu.Unlock()
			p.wg.Go(func() { p.relay(c, target) })
		}
	})
	return p, nil
}

// Count returns the round trips so far.
func (p *Trips) Count() int64 { return p.n.Load() }

// Close stops the proxy, and closes the connections its clients left
// open.
func (p *Trips) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// relay carries one connection both ways, counting the client's turns.
func (p *Trips) relay(client net.Conn, target string) {
	defer func() {
		client.Close()
		p.mu.Lock()
		delete(p.open, client)
		p.mu.Unlock()
	}()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	var clientLast atomic.Bool // who spoke last: the client, or the server
	done := make(chan struct{}, 2)
	carry := func(dst, src net.Conn, fromClient bool) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if clientLast.Swap(fromClient) != fromClient && fromClient {
					p.n.Add(1)
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go carry(server, client, true)
	go carry(client, server, false)
	<-done // one side closed: close both, which ends the other
	client.Close()
	server.Close()
	<-done
}
