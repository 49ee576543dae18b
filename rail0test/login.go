package rail0test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// Login signs in with the key privateKeyHex the way a client does, over
// HTTP. The key is 64 hex digits, 0x optional. Login sends POST
// /auth/nonces, then a SIWE message in the exact layout with an EIP-191
// signature to POST /auth. It returns the session token.
//
// It is a convenience for tests and examples that do not use the SDK's
// signing package. The requests go through the rate limiter, faults and
// ledger like any other.
func (s *Server) Login(ctx context.Context, privateKeyHex string) (string, error) {
	key, err := crypto.HexToECDSA(trim0x(privateKeyHex))
	if err != nil {
		return "", fmt.Errorf("rail0test: login: invalid private key")
	}
	var nonce struct {
		Nonce string `json:"nonce"`
	}
	if err := s.postJSON(ctx, "/auth/nonces", nil, http.StatusCreated, &nonce); err != nil {
		return "", err
	}
	address := crypto.PubkeyToAddress(key.PublicKey).Hex()
	msg := s.SIWEMessage(address, nonce.Nonce, loginStatement)
	sig, err := crypto.Sign(personalHash([]byte(msg)), key)
	if err != nil {
		return "", fmt.Errorf("rail0test: login: signing: %w", err)
	}
	sig[64] += 27
	var sess struct {
		Token string `json:"token"`
	}
	body := map[string]string{"message": msg, "signature": hexutil.Encode(sig)}
	if err := s.postJSON(ctx, "/auth", body, http.StatusCreated, &sess); err != nil {
		return "", err
	}
	return sess.Token, nil
}

func trim0x(s string) string {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// postJSON is the small HTTP client behind Login.
func (s *Server) postJSON(ctx context.Context, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		return fmt.Errorf("rail0test: login: POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("rail0test: login: POST %s: %w", path, err)
	}
	if resp.StatusCode != want {
		var e struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(data, &e)
		return fmt.Errorf("rail0test: login: POST %s answered %d %s", path, resp.StatusCode, e.Code)
	}
	return json.Unmarshal(data, out)
}
