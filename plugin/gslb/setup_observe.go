package gslb

import "github.com/meridian-gslb/meridian/internal/config"

// observeOptions is the table of the options that show what the block decides: the answer log
// and the traffic shares.
func observeOptions(a *config.AnswerLogOptions, shares *bool) optionTable {
	return optionTable{
		"traffic_shares":    setFlag(shares, true),
		"answer_log":        setFlag(&a.Enable, true),
		"answer_log_sample": setPositive(&a.Sample),
		"answer_log_queue":  setPositive(&a.Queue),
	}
}
