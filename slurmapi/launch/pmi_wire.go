package launch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// pmiConn is one task's PMI connection. Both protocols start with the
// same line, "cmd=init pmi_version=V pmi_subversion=S\n": a PMI-1 client
// goes on with lines of space-separated key=value pairs, a PMI-2 client
// with messages of a 6-byte decimal length (left-aligned, space-padded)
// and "key=value;" pairs, ";" in a value doubled.
type pmiConn struct {
	n    *pmiNode
	rank int
	f    *os.File

	r         *bufio.Reader
	wmu       sync.Mutex
	version   int // 1 or 2 once the task's init line was read
	inited    bool
	finalized bool
}

// pmiMaxMessage bounds a request (PMI-1 line or PMI-2 message).
const pmiMaxMessage = 64 << 10

func (c *pmiConn) serve() {
	defer c.n.taskGone()
	defer c.f.Close()
	c.r = bufio.NewReaderSize(c.f, 4096)
	for {
		var err error
		if c.version == 2 {
			err = c.serve2()
		} else {
			err = c.serve1()
		}
		if err == nil {
			continue
		}
		if err == errFinalized {
			return
		}
		if c.inited && !c.finalized {
			// As hydra does: an MPI task that ends without finalizing
			// leaves its peers waiting forever (in a fence, a receive).
			reason := "its PMI connection closed before PMI finalize"
			if err != io.EOF {
				reason = "PMI: " + err.Error()
			}
			c.n.abort(pmiAbort{Rank: c.rank, Reason: reason})
		}
		return
	}
}

var errFinalized = fmt.Errorf("finalized")

// readLine reads one PMI-1 line without its newline.
func (c *pmiConn) readLine() (string, error) {
	var b []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		b = append(b, chunk...)
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull && len(b) < pmiMaxMessage {
			continue
		}
		if err == bufio.ErrBufferFull {
			return "", fmt.Errorf("a command longer than %d bytes", pmiMaxMessage)
		}
		if err == io.EOF && len(b) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// parse1 splits a PMI-1 line into its pairs.
func parse1(line string) map[string]string {
	kv := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv
}

// send1 writes a PMI-1 answer: cmd=CMD then the pairs.
func (c *pmiConn) send1(cmd string, pairs ...string) {
	var b strings.Builder
	b.WriteString("cmd=" + cmd)
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString(" " + pairs[i] + "=" + pairs[i+1])
	}
	b.WriteString("\n")
	c.write(b.String())
}

func (c *pmiConn) write(s string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = io.WriteString(c.f, s) // a task that is gone is noticed by the reader
}

// serve1 answers one PMI-1 command (and the init line of both).
func (c *pmiConn) serve1() error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "mcmd=") {
		// PMI-1 spawn: lines up to "endcmd". Sluice starts no new tasks.
		for line != "endcmd" {
			if line, err = c.readLine(); err != nil {
				return err
			}
		}
		c.send1("spawn_result", "rc", "-1", "msg", "spawn_is_not_supported")
		return nil
	}
	kv := parse1(line)
	n := c.n
	switch cmd := kv["cmd"]; cmd {
	case "init":
		v, _ := strconv.Atoi(kv["pmi_version"])
		sub, _ := strconv.Atoi(kv["pmi_subversion"])
		switch {
		case v == 1:
			c.version, c.inited = 1, true
			c.send1("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "0")
		case v == 2 && sub == 0:
			c.version, c.inited = 2, true
			c.send1("response_to_init", "pmi_version", "2", "pmi_subversion", "0", "rc", "0")
		default:
			c.send1("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "-1")
		}
	case "get_maxes":
		c.send1("maxes", "rc", "0", "kvsname_max", strconv.Itoa(pmiKVSNameMax),
			"keylen_max", strconv.Itoa(pmiKeyMax), "vallen_max", strconv.Itoa(pmiValueMax))
	case "get_universe_size":
		c.send1("universe_size", "rc", "0", "size", strconv.Itoa(n.size))
	case "get_appnum":
		c.send1("appnum", "rc", "0", "appnum", "0")
	case "get_my_kvsname":
		c.send1("my_kvsname", "rc", "0", "kvsname", n.kvsName)
	case "put":
		n.put(kv["key"], kv["value"])
		c.send1("put_result", "rc", "0")
	case "get":
		if v, ok := n.get(kv["key"]); ok {
			c.send1("get_result", "rc", "0", "value", v)
		} else {
			c.send1("get_result", "rc", "-1", "msg", "key_"+kv["key"]+"_not_found")
		}
	case "barrier_in":
		n.enterFence(fenceWait{c: c}) // answered by fenceDone
	case "finalize":
		c.finalized = true
		c.send1("finalize_ack", "rc", "0")
		return errFinalized
	case "abort":
		code, _ := strconv.Atoi(kv["exitcode"])
		c.finalized = true // the abort is the step's end, not a lost task
		n.abort(pmiAbort{Rank: c.rank, Code: code, Reason: "PMI abort (MPI_Abort)"})
		return errFinalized // closing the connection lets the task exit
	case "publish_name", "unpublish_name", "lookup_name":
		c.send1(strings.TrimSuffix(cmd, "_name")+"_result",
			"rc", "-1", "info", "fail", "msg", "name_service_is_not_supported")
	default:
		c.send1("error", "rc", "-1", "msg", "unknown_command_"+strings.ReplaceAll(cmd, " ", "_"))
	}
	return nil
}

// read2 reads one PMI-2 message.
func (c *pmiConn) read2() (map[string]string, error) {
	var head [6]byte
	if _, err := io.ReadFull(c.r, head[:]); err != nil {
		return nil, err
	}
	size, err := strconv.Atoi(strings.TrimSpace(string(head[:])))
	if err != nil || size < 0 || size > pmiMaxMessage {
		return nil, fmt.Errorf("bad PMI-2 message length %q", head[:])
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c.r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return parse2(string(body))
}

// parse2 splits a PMI-2 message into its pairs: "k=v;" each, ";;" a ";"
// of the value.
func parse2(s string) (map[string]string, error) {
	kv := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			if strings.Trim(s, "; ") == "" {
				break
			}
			return nil, fmt.Errorf("PMI-2 pair %q has no =", s)
		}
		key := s[:eq]
		s = s[eq+1:]
		var v strings.Builder
		for {
			i := strings.IndexByte(s, ';')
			if i < 0 {
				v.WriteString(s)
				s = ""
				break
			}
			if i+1 < len(s) && s[i+1] == ';' {
				v.WriteString(s[:i+1])
				s = s[i+2:]
				continue
			}
			v.WriteString(s[:i])
			s = s[i+1:]
			break
		}
		kv[key] = v.String()
	}
	return kv, nil
}

// send2 writes a PMI-2 answer: cmd=CMD, the request's thrid when it had
// one (a threaded client matches answers by it), then the pairs.
func (c *pmiConn) send2(thrid, cmd string, pairs ...string) {
	var b strings.Builder
	b.WriteString("cmd=" + cmd + ";")
	if thrid != "" {
		b.WriteString("thrid=" + escape2(thrid) + ";")
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString(pairs[i] + "=" + escape2(pairs[i+1]) + ";")
	}
	c.write(fmt.Sprintf("%-6d", b.Len()) + b.String())
}

func escape2(v string) string { return strings.ReplaceAll(v, ";", ";;") }

// serve2 answers one PMI-2 command.
func (c *pmiConn) serve2() error {
	kv, err := c.read2()
	if err != nil {
		return err
	}
	n := c.n
	th := kv["thrid"]
	switch cmd := kv["cmd"]; cmd {
	case "fullinit":
		c.send2(th, "fullinit-response", "rc", "0", "pmi-version", "2", "pmi-subversion", "0",
			"rank", strconv.Itoa(c.rank), "size", strconv.Itoa(n.size), "appnum", "0",
			"debugged", "FALSE", "pmiverbose", "FALSE")
	case "job-getid":
		c.send2(th, "job-getid-response", "rc", "0", "jobid", n.kvsName)
	case "kvs-put":
		n.put(kv["key"], kv["value"])
		c.send2(th, "kvs-put-response", "rc", "0")
	case "kvs-get":
		if v, ok := n.get(kv["key"]); ok {
			c.send2(th, "kvs-get-response", "rc", "0", "found", "TRUE", "value", v)
		} else {
			c.send2(th, "kvs-get-response", "rc", "0", "found", "FALSE")
		}
	case "kvs-fence":
		n.enterFence(fenceWait{c: c, thrid: th})
	case "info-getjobattr":
		if v, ok := n.jobAttr(kv["key"]); ok {
			c.send2(th, "info-getjobattr-response", "rc", "0", "found", "TRUE", "value", v)
		} else {
			c.send2(th, "info-getjobattr-response", "rc", "0", "found", "FALSE")
		}
	case "info-putnodeattr":
		n.putNodeAttr(kv["key"], kv["value"])
		c.send2(th, "info-putnodeattr-response", "rc", "0")
	case "info-getnodeattr":
		n.getNodeAttr(kv["key"], kv["wait"] == "TRUE", func(v string, found bool) {
			if found {
				c.send2(th, "info-getnodeattr-response", "rc", "0", "found", "TRUE", "value", v)
			} else {
				c.send2(th, "info-getnodeattr-response", "rc", "0", "found", "FALSE")
			}
		})
	case "finalize":
		c.finalized = true
		c.send2(th, "finalize-response", "rc", "0")
		return errFinalized
	case "abort":
		c.finalized = true
		reason := "PMI abort (MPI_Abort)"
		if m := kv["msg"]; m != "" {
			reason += ": " + m
		}
		n.abort(pmiAbort{Rank: c.rank, Reason: reason})
		return errFinalized
	default:
		// spawn, job-connect, name-publish and the rest: refused, so the
		// task fails instead of waiting for an answer.
		c.send2(th, cmd+"-response", "rc", "-1", "errmsg", "Sluice's PMI does not support "+cmd)
	}
	return nil
}
