package gslb

import "github.com/meridian-gslb/meridian/internal/config"

// observeOptions is the table of the options that show what the block decides: the answer log.
func observeOptions(a *config.AnswerLogOptions) optionTable {
	return optionTable{
		"answer_log":        setFlag(&a.Enable, true),
		"answer_log_sample": setPositive(&a.Sample),
		"answer_log_queue":  setPositive(&a.Queue),
	}
}
