package signing

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func TestAccountDelegatesToThePackageFunctions(t *testing.T) {
	ctx := context.Background()
	acct, err := AccountFromPrivateKey(cowKey)
	if err != nil {
		t.Fatal(err)
	}
	if acct.Address() != cowAddr {
		t.Errorf("Address() = %s, want EIP-55 %s", acct.Address(), cowAddr)
	}
	if acct.Signer().Address().Hex() != cowAddr {
		t.Errorf("Signer() is not the cow signer")
	}

	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)
	if sig, err := acct.SignPayload(ctx, payload); err != nil || sig != transferSignature {
		t.Errorf("SignPayload = %s, %v", sig, err)
	}
	if sig, err := acct.SignPayloadForChain(ctx, payload, 84532); err != nil || sig != transferSignature {
		t.Errorf("SignPayloadForChain = %s, %v", sig, err)
	}
	if _, err := acct.SignPayloadForChain(ctx, payload, 1); !errors.Is(err, ErrChainMismatch) {
		t.Errorf("SignPayloadForChain(1) = %v", err)
	}
	if raw, err := acct.SignTransaction(ctx, readmeUnsignedTx); err != nil || raw != readmeSignedTx {
		t.Errorf("SignTransaction = %s, %v", raw, err)
	}
	want, _ := SignMessage(ctx, acct.Signer(), "hello")
	if sig, err := acct.SignMessage(ctx, "hello"); err != nil || sig != want {
		t.Errorf("SignMessage = %s, %v", sig, err)
	}

	mail := newPayload(t, PrimaryTypeTransfer, cowAddr)
	mail["primaryType"] = "Mail"
	if _, err := acct.SignPayload(ctx, mail.raw(t)); !errors.Is(err, ErrUnknownPrimaryType) {
		t.Errorf("SignPayload(Mail) = %v", err)
	}
	if _, err := acct.SignPayload(ctx, json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidPayload) {
		t.Errorf("SignPayload({}) = %v", err)
	}
}

func TestAccountFromPrivateKeyRefusesBadKey(t *testing.T) {
	if a, err := AccountFromPrivateKey("0x1234"); a != nil || !errors.Is(err, ErrInvalidPrivateKey) {
		t.Fatalf("AccountFromPrivateKey = %v, %v", a, err)
	}
}
