package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	tap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
)

// maxFrame is the largest dnstap frame `meridian answers` reads (the Go dnstap tool's bound).
const maxFrame = 96 * 1024

// answerLine is one response of the answer log as `meridian answers` prints it.
type answerLine struct {
	Time     time.Time       `json:"time"`
	Identity string          `json:"identity,omitempty"`
	Client   string          `json:"client"`
	Protocol string          `json:"protocol,omitempty"`
	Question string          `json:"question,omitempty"`
	Rcode    string          `json:"rcode,omitempty"`
	Answer   []string        `json:"answer,omitempty"`
	Decision json.RawMessage `json:"decision,omitempty"`
}

// runAnswers prints the responses of the dnstap files named in args ("-": standard input), one
// JSON object a line, with the decision their extra field carries (docs/operations.md, "The
// answer log"). It returns the process exit code.
func runAnswers(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: meridian answers FILE... (a dnstap file, as the dnstap tool writes with -w; - for standard input)")
		return 2
	}
	enc := json.NewEncoder(stdout)
	for _, name := range args {
		if err := printAnswers(name, stdin, enc); err != nil {
			fmt.Fprintf(stderr, "meridian answers: %s: %v\n", name, err)
			return 1
		}
	}
	return 0
}

// printAnswers prints the responses of one dnstap file.
func printAnswers(name string, stdin io.Reader, enc *json.Encoder) error {
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, err := tap.NewReader(in, nil)
	if err != nil {
		return fmt.Errorf("not a dnstap stream: %w", err)
	}
	dec := tap.NewDecoder(r, maxFrame)
	for {
		var frame tap.Dnstap
		if err := dec.Decode(&frame); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m := frame.GetMessage(); m.GetType() == tap.Message_CLIENT_RESPONSE {
			if err := enc.Encode(answerLineOf(&frame, m)); err != nil {
				return err
			}
		}
	}
}

// answerLineOf returns the line of a response frame.
func answerLineOf(frame *tap.Dnstap, m *tap.Message) answerLine {
	l := answerLine{
		Time:     time.Unix(int64(m.GetResponseTimeSec()), int64(m.GetResponseTimeNsec())).UTC(),
		Identity: string(frame.GetIdentity()),
		Client:   net.JoinHostPort(net.IP(m.GetQueryAddress()).String(), fmt.Sprint(m.GetQueryPort())),
	}
	if m.SocketProtocol != nil {
		l.Protocol = m.GetSocketProtocol().String()
	}
	if json.Valid(frame.GetExtra()) {
		l.Decision = frame.GetExtra()
	}
	var resp dns.Msg
	if resp.Unpack(m.GetResponseMessage()) == nil && len(resp.Question) == 1 {
		q := resp.Question[0]
		l.Question, l.Rcode = q.Name+" "+dns.TypeToString[q.Qtype], dns.RcodeToString[resp.Rcode]
		for _, rr := range resp.Answer {
			l.Answer = append(l.Answer, rr.String())
		}
	}
	return l
}
