package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

// exampleKey is a well-known development key (never use it for real funds).
const exampleKey = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// newSignInGateway stands in for a RAIL0 gateway's sign-in routes. It
// checks the EIP-191 signature of the SIWE message as the real gateway
// does, and serves GET /webhooks to sessions.
func newSignInGateway() *httptest.Server {
	const nonce = "8f2c1d9a7b3e4f60"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /auth/nonces", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"nonce": %q, "expires_at": %q}`, nonce, time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("POST /auth", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Message, Signature string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		signer, err := recoverMessageSigner(body.Message, body.Signature)
		lines := strings.Split(body.Message, "\n")
		if err != nil || len(lines) != 10 || lines[1] != signer.Hex() || lines[3] != rail0.StatementLogin || lines[8] != "Nonce: "+nonce {
			http.Error(w, `{"code": "invalid_siwe", "title": "Bad sign-in", "detail": "Refused.", "status": "invalid_siwe"}`, http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": "jwt-example", "address": %q, "account_id": "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9", "name": "Acme", "expires_at": %q}`,
			signer.Hex(), time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /webhooks", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer jwt-example" {
			http.Error(w, `{"code": "unauthorized", "title": "Unauthorized", "detail": "Sign in.", "status": "unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Total-Count", "0")
		fmt.Fprint(w, `[]`)
	})
	return httptest.NewServer(mux)
}

// recoverMessageSigner returns the address whose EIP-191 signature of
// message signature is.
func recoverMessageSigner(message, signature string) (common.Address, error) {
	sig, err := hexutil.Decode(signature)
	if err != nil || len(sig) != 65 {
		return common.Address{}, fmt.Errorf("bad signature")
	}
	sig[64] -= 27
	pub, err := crypto.SigToPub(accounts.TextHash([]byte(message)), sig)
	if err != nil {
		return common.Address{}, err
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// Sign in with Ethereum: a client created WithSigner asks for a nonce,
// builds the EIP-4361 message, has the account sign it and trades it for a
// session on first use, and again shortly before the session expires.
// Session returns it.
func ExampleClient_Session() {
	gateway := newSignInGateway()
	defer gateway.Close()

	account, err := signing.NewPrivateKeySigner(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	// The SIWE domain and URI come from the base URL; WithSignIn sets
	// them when the gateway expects another host or sign-in chain.
	client, err := rail0.NewClient(gateway.URL, rail0.WithSigner(account))
	if err != nil {
		log.Fatal(err)
	}
	session, err := client.Session(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signed in as", session.Address)
	fmt.Println("merchant account:", session.HasAccount())
	fmt.Println(strings.Contains(fmt.Sprint(session), session.Token())) // the token is never printed
	// Output:
	// signed in as 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
	// merchant account: true
	// false
}

// Register a second payee wallet: the wallet signs an ownership proof,
// which a merchant session then submits.
func ExampleAuthService_WalletProof() {
	gateway := newSignInGateway()
	defer gateway.Close()
	wallet, err := signing.NewPrivateKeySigner(exampleKey)
	if err != nil {
		log.Fatal(err)
	}
	client, err := rail0.NewClient(gateway.URL)
	if err != nil {
		log.Fatal(err)
	}
	proof, err := client.Auth.WalletProof(context.Background(), rail0.AuthWalletProofParams{Wallet: wallet})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(proof.Address)
	fmt.Println(strings.Split(proof.Message, "\n")[3])
	// Then, with a merchant session:
	//   client.Wallets.Create(ctx, accountID, rail0.WalletCreateParams{WalletProof: *proof, Label: "Treasury"})
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
	// Add this wallet to your RAIL0 account
}
