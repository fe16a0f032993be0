package redisserver

import (
	"bytes"
	"io"
	"net"
	"sync"
)

// Proxy is a TCP proxy on a loopback port in front of a server, which can
// lose a reply the way a network does: the server ran the command and
// answered, and the client sees its connection reset instead.
type Proxy struct {
	Addr   string // where clients connect
	target string
	ln     net.Listener

	mu     sync.Mutex
	marker []byte // the command whose next reply is lost, nil when none
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// StartProxy starts a proxy to target on a free loopback port.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	return p, nil
}

// LoseReplyTo makes the proxy lose the reply to the next command whose
// bytes contain marker (EVALSHA, say): the command reaches the server,
// and when the server's reply comes the proxy drops it and resets both
// connections.
func (p *Proxy) LoseReplyTo(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = []byte(marker)
}

// Armed reports whether the proxy still waits for a command to lose the
// reply of.
func (p *Proxy) Armed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.marker != nil
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(client, server) {
			client.Close()
			if server != nil {
				server.Close()
			}
			continue
		}
		cut := make(chan struct{}) // closed when the client sent the marked command
		p.wg.Go(func() { p.forward(client, server, cut) })
		p.wg.Go(func() { p.reply(server, client, cut) })
	}
}

// track records both ends of a connection, for Close; false once the
// proxy is closed. The ends stay recorded until Close: a test makes few.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

// forward copies the client's commands to the server, and closes cut
// once it has sent a command carrying the marker.
func (p *Proxy) forward(client, server net.Conn, cut chan struct{}) {
	defer server.Close()
	buf := make([]byte, 32<<10)
	marked := false
	for {
		n, err := client.Read(buf)
		if n > 0 && !marked && p.take(buf[:n]) {
			marked = true
			close(cut)
		}
		if n > 0 {
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take reports whether b holds the marker, disarming the proxy if so.
func (p *Proxy) take(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == nil || !bytes.Contains(bytes.ToLower(b), bytes.ToLower(p.marker)) {
		return false
	}
	p.marker = nil
	return true
}

// reply copies the server's replies to the client, but once cut is closed
// it drops the next reply and resets both connections.
func (p *Proxy) reply(server, client net.Conn, cut chan struct{}) {
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		select {
		case <-cut:
			reset(client)
			reset(server)
			return
		default:
		}
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				reset(client)
			}
			return
		}
	}
}

// reset closes c with a TCP reset rather than an orderly FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
