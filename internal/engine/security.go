package engine

import (
	"crypto/tls"
	"fmt"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/certfile"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/cookie"
	"github.com/meridian-gslb/meridian/internal/rrl"
	"github.com/meridian-gslb/meridian/internal/source/files"
)

// security is what a block has of the options of a server on the open internet: its response
// rate limiter (nil when rrl is off), its cookie secrets (nil when cookies are off), and the
// certificate of its tls:// and quic:// addresses (nil without tls_cert).
type security struct {
	limiter *rrl.Limiter
	cookies *cookie.Jar
	cert    *certfile.Cert
}

// rrlConfig turns the rrl options into the limiter's settings.
func rrlConfig(o config.RRLOptions) rrl.Config {
	c := rrl.Config{RRLAccounts: o.RRLAccounts}
	c.Rates[rrl.Positive] = o.ResponsesPerSecond
	c.Rates[rrl.NoData] = o.Rate(o.NoDataPerSecond)
	c.Rates[rrl.NXDomain] = o.Rate(o.NXDomainsPerSecond)
	c.Rates[rrl.Referral] = o.Rate(o.ReferralsPerSecond)
	c.Rates[rrl.Error] = o.Rate(o.ErrorsPerSecond)
	return c
}

// openSecurity builds the block's security from opts; the cookie secrets are the file's, or
// the process's random ones (fallback) without a file. The errors name the option.
func openSecurity(opts config.Options, fallback func() *cookie.Secrets, log Logger) (security, error) {
	var s security
	if opts.RRL.Enable {
		cfg := rrlConfig(opts.RRL)
		if err := cfg.Check(); err != nil {
			return s, fmt.Errorf("rrl: %w", err)
		}
		s.limiter = rrl.New(cfg, func(ev rrl.Event) { logLimited(log, ev) })
	}
	if opts.Cookies.Enable {
		secrets := fallback()
		if f := opts.Cookies.SecretFile; f != "" {
			var err error
			if secrets, err = loadSecrets(f); err != nil {
				return s, err
			}
		}
		s.cookies = cookie.NewJar(secrets)
	}
	if opts.TLS.Cert != "" {
		c, err := certfile.Load(opts.TLS.Cert, opts.TLS.Key)
		if err != nil {
			return s, err
		}
		s.cert = c
	}
	return s, nil
}

// checkSecurity checks what openSecurity would build, for meridian check.
func checkSecurity(opts config.Options) error {
	_, err := openSecurity(opts, cookie.RandomSecrets, nil)
	return err
}

// loadSecrets reads a cookie_secret_file.
func loadSecrets(file string) (*cookie.Secrets, error) {
	data, err := config.ReadFile(file, 1<<16)
	if err != nil {
		return nil, fmt.Errorf("cookie_secret_file: %w", err)
	}
	s, err := cookie.ParseSecrets(file, data)
	if err != nil {
		return nil, fmt.Errorf("cookie_secret_file: %w", err)
	}
	return s, nil
}

// logLimited logs that a client network's account went over its rate.
func logLimited(log Logger, ev rrl.Event) {
	what := ev.Name
	if ev.Kind == rrl.Positive {
		what += " " + dns.TypeToString[ev.Qtype]
	}
	if ev.Kind == rrl.Error {
		what = "errors"
	}
	if ev.LogOnly {
		log.Infof("rrl (log only): %s is over %d %s responses/s for %s: would be limited", ev.Network, ev.Rate, ev.Kind, what)
		return
	}
	log.Warningf("rrl: %s is over %d %s responses/s for %s: limited", ev.Network, ev.Rate, ev.Kind, what)
}

// watchSecurity watches the cookie secret file and the certificate files, which are read
// again when they change; on error the previous ones keep serving.
func (e *Engine) watchSecurity() error {
	if f := e.opts.Cookies.SecretFile; f != "" && e.sec.cookies != nil {
		stop, err := files.Watch([]string{f}, e.reloadSecrets, e.log)
		if err != nil {
			return fmt.Errorf("watch cookie_secret_file: %w", err)
		}
		e.stops = append(e.stops, stop)
	}
	if c := e.sec.cert; c != nil {
		stop, err := files.Watch(c.Files(), e.reloadCert, e.log)
		if err != nil {
			return fmt.Errorf("watch tls_cert and tls_key: %w", err)
		}
		e.stops = append(e.stops, stop)
	}
	return nil
}

func (e *Engine) reloadSecrets() {
	s, err := loadSecrets(e.opts.Cookies.SecretFile)
	if err != nil {
		e.log.Errorf("%v: the previous cookie secrets keep serving", err)
		return
	}
	e.sec.cookies.Set(s)
	e.log.Infof("cookie secrets read again from %s", e.opts.Cookies.SecretFile)
}

func (e *Engine) reloadCert() {
	if err := e.sec.cert.Reload(); err != nil {
		e.log.Errorf("%v: the previous certificate keeps serving", err)
		return
	}
	e.log.Infof("DNS over TLS and QUIC certificate read again from %s (expires %s)", e.opts.TLS.Cert, e.sec.cert.NotAfter().UTC().Format("2006-01-02"))
}

// ServerTLS returns the TLS configuration of the block's tls:// and quic:// addresses: the
// certificate of tls_cert and tls_key, read again when they change; nil without tls_cert.
func (e *Engine) ServerTLS() *tls.Config {
	if e.sec.cert == nil {
		return nil
	}
	return e.sec.cert.Config()
}

// cookieSecrets returns the process's random cookie secret, made once: the secret of every
// block without a cookie_secret_file, kept across Corefile reloads so that the cookies the
// clients hold stay valid.
func (r *Registry) cookieSecrets() *cookie.Secrets {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cookies == nil {
		r.cookies = cookie.RandomSecrets()
	}
	return r.cookies
}
