package gslb

import "github.com/meridian-gslb/meridian/internal/config"

// observeOptions is the table of the options that show what the block decides: the answer log,
// the traffic shares and the traces.
func observeOptions(a *config.AnswerLogOptions, shares *bool, tr *config.TracesOptions) optionTable {
	return optionTable{
		"traces_endpoint":   setString(&tr.Endpoint),
		"traces_insecure":   setFlag(&tr.Insecure, true),
		"traces_service":    setString(&tr.Service),
		"traffic_shares":    setFlag(shares, true),
		"answer_log":        setFlag(&a.Enable, true),
		"answer_log_sample": setPositive(&a.Sample),
		"answer_log_queue":  setPositive(&a.Queue),
	}
}
