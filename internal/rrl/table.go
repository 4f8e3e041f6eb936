package rrl

// An account is one 64-bit slot: the top 24 bits of its key's hash (never 0: 0 is an empty
// slot), the second it was last debited (20 bits: it wraps after 12 days, and an account
// idle that long is reset anyway, its set having been reused), and its balance (20 bits,
// two's complement): credits of responses left, negative while the account is in debt.
const (
	setSize   = 4
	fpShift   = 40
	timeShift = 20
	timeMask  = 1<<20 - 1
	balMask   = 1<<20 - 1
	// retries bounds the compare-and-swap loop of an account that other goroutines keep
	// changing: past it the response is allowed.
	retries = 4
)

// pack makes a slot.
func pack(fp, sec uint64, bal int64) uint64 {
	return fp<<fpShift | (sec&timeMask)<<timeShift | uint64(bal)&balMask
}

// balance returns the balance of slot v.
func balance(v uint64) int64 {
	return int64(v<<44) >> 44 // sign-extend the low 20 bits
}

// debit takes one response from the account of hash h, whose rate is rate a second, at second
// sec of the limiter: limited when the account had no credit left, started when that response
// is the first it refused since it last had credit.
//
// A key whose set holds no account of it takes the slot of the account with the most credit
// (counted as if it had the same rate): an empty slot, or one whose account is whole again,
// which forgets nothing (a new account starts whole too); only when every account of the set
// is in use does one with credit left make way, never before one in debt, so that a flood
// being limited keeps its account however many other keys come by.
func (l *Limiter) debit(h, rate, sec uint64) (limited, started bool) {
	set := (h & l.mask) * setSize
	fp := h >> fpShift
	if fp == 0 {
		fp = 1
	}
	floor := -int64(rate * l.window)
	for range retries {
		victim, victimCredit, victimOld, changed := -1, int64(0), uint64(0), false
		for i := range setSize {
			slot := &l.slots[set+uint64(i)]
			v := slot.Load()
			bal := int64(rate) // an empty slot: a whole account
			if v != 0 {
				bal = l.refill(v, rate, sec)
			}
			if v == 0 || v>>fpShift != fp {
				if victim < 0 || bal > victimCredit {
					victim, victimCredit, victimOld = i, bal, v
				}
				continue
			}
			limited, started = bal <= 0, bal == 0
			if slot.CompareAndSwap(v, pack(fp, sec, max(floor, bal-1))) {
				return limited, started
			}
			changed = true // by another query: look again
			break
		}
		if !changed && l.slots[set+uint64(victim)].CompareAndSwap(victimOld, pack(fp, sec, int64(rate)-1)) {
			return false, false
		}
	}
	return false, false
}

// refill returns the balance of slot v at second sec, with the credit of the seconds since it
// was last debited at rate a second, up to a whole account.
func (l *Limiter) refill(v, rate, sec uint64) int64 {
	bal := balance(v)
	if age := (sec - v>>timeShift) & timeMask; age > 0 {
		bal = min(int64(rate), bal+int64(min(age, l.window+1)*rate))
	}
	return bal
}
