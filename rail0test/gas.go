package rail0test

import "math/big"

// This file is the gas of the simulated chain. It says what each call of
// the RAIL0 contract uses in the state it meets. It also gives the limit a
// gateway that estimates on the chain prepares for it.

// The fees of every transaction. simGasPrice and simBaseFee are what a
// confirmed one paid.
var (
	simGasPrice = big.NewInt(1200000)
	simBaseFee  = big.NewInt(1000000)
)

const (
	simPriorityFee = "1000000"
	simMaxFee      = "1500000000"
)

// The gas the shared contract guide measured for the contract v1.3.0
// (section 12.2). Capture is simulated at the dearer end of its 77,000 to
// 175,000. So is a refund while the contract holds none of the token: the
// dearer end of its 324,000 to 328,000.
const (
	gasAuthorize     = 411_000
	gasCharge        = 417_000
	gasCapture       = 175_000
	gasRefund        = 207_000
	gasRefundUnheld  = 328_000
	gasVoidRelease   = 77_000
	gasDisputeSignal = 43_000
	// gasFirstPayment is what a fresh deployment's first payment pays
	// more for its first writes to the contract's storage: authorize
	// 509,000. The guide measured it on authorize; a first charge is
	// taken to pay it too, the dearer reading.
	gasFirstPayment = 98_000
)

// gasState is what the gas of a call depends on, read from the chain.
type gasState struct {
	// first: no payment was authorized or charged on the deployment yet.
	first bool
	// unheld: the contract holds none of the payment's token, so a
	// refund's transfer into it writes a balance from zero.
	unheld bool
}

// gasStateOf reads the state p's next call meets. Call with s.mu held.
func (s *Server) gasStateOf(p *payment) gasState {
	c := p.Chain.Contract
	return gasState{first: !c.paid, unheld: s.balance(c.Address, p.Token).Sign() == 0}
}

// gasUsed is what the real contract spends on op in state st, when it
// succeeds.
func gasUsed(op string, st gasState) uint64 {
	switch op {
	case opAuthorize, opCharge:
		gas := uint64(gasAuthorize)
		if op == opCharge {
			gas = gasCharge
		}
		if st.first {
			gas += gasFirstPayment
		}
		return gas
	case opCapture:
		return gasCapture
	case opRefund:
		if st.unheld {
			return gasRefundUnheld
		}
		return gasRefund
	case opVoid, opRelease:
		return gasVoidRelease
	}
	return gasDisputeSignal // dispute, closeDispute
}

// gasLimit is the gas_limit prepared for op in state st.
// A gateway that estimates the call on the chain sets it that way: the
// estimate and a 60% margin. The margin lets a step prepared in a cheap
// state survive the dear one the chain may be in when it is mined. Take a
// refund estimated while the contract held the token (207,000). It gets
// 331,200. That is enough for one mined after that escrow left it
// (328,000).
func gasLimit(op string, st gasState) uint64 {
	gas := gasUsed(op, st)
	return gas + gas*3/5
}
