<?php
// checkout.php - a PHP checkout through escrow-gateway (docs/gateway.md),
// with php-curl only: reserve a unit with an Idempotency-Key, take the
// payment (here: nothing), confirm; "sold out" ends the sale, "try later"
// waits Retry-After and asks again with the SAME key (a retry can never
// take a second unit), "timed out" (the outcome is unknown) asks again
// with the same key too.
//
//   php checkout.php URL KEY_FILE CA_FILE ITEM BUYERS [FIRST]
//
// Buyers FIRST .. FIRST+BUYERS-1 (FIRST defaults to 0) each try once.
// Prints one line per buyer and a RESULT line.

function escrow_call($ch, string $url, string $key, string $method, string $path,
                     ?array $body, ?string $idem): array
{
    $headers = ['Authorization: Bearer ' . $key, 'Content-Type: application/json'];
    if ($idem !== null) {
        $headers[] = 'Idempotency-Key: ' . $idem;
    }
    $got = [];
    curl_setopt_array($ch, [
        CURLOPT_URL => $url . $path,
        CURLOPT_CUSTOMREQUEST => $method,
        CURLOPT_POSTFIELDS => $body === null ? '' : json_encode($body),
        CURLOPT_HTTPHEADER => $headers,
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HEADERFUNCTION => function ($ch, $line) use (&$got) {
            $parts = explode(':', $line, 2);
            if (count($parts) === 2) {
                $got[strtolower(trim($parts[0]))] = trim($parts[1]);
            }
            return strlen($line);
        },
    ]);
    $raw = curl_exec($ch);
    if ($raw === false) {
        return ['status' => 0, 'body' => ['code' => 'connection', 'retryable' => true,
                                          'message' => curl_error($ch)], 'headers' => []];
    }
    return ['status' => curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
            'body' => json_decode($raw, true) ?? [], 'headers' => $got];
}

// The same request with the same key while the answer says "retry":
// "try later" (every unit is held by someone) a few times, a lost or
// unknown outcome (timed_out, busy, a dropped connection) up to $tries
// times; returns the last answer.
function escrow_retrying($ch, string $url, string $key, string $method, string $path,
                         ?array $body, string $idem, int $tries = 50): array
{
    for ($i = 1; ; $i++) {
        $r = escrow_call($ch, $url, $key, $method, $path, $body, $idem);
        $retry = $r['status'] === 0 || ($r['status'] >= 500 && ($r['body']['retryable'] ?? false))
                 || $r['status'] === 429;
        $later = ($r['body']['code'] ?? '') === 'try_later';
        if (!$retry || $i >= ($later ? 2 : $tries)) {
            return $r;
        }
        $after = (float)($r['headers']['retry-after'] ?? 0.05);
        usleep((int)(min($after, 1.0) * 1e6));
    }
}

[$script, $url, $keyFile, $caFile, $item, $buyers, $first] = $argv + [null, null, null, null, null, null, 0];
if ($buyers === null) {
    fwrite(STDERR, "usage: php checkout.php URL KEY_FILE CA_FILE ITEM BUYERS [FIRST]\n");
    exit(2);
}
$key = trim(file_get_contents($keyFile));
$ch = curl_init(); // one handle: one keep-alive HTTPS connection
curl_setopt($ch, CURLOPT_CAINFO, $caFile);
$tally = ['sold' => 0, 'sold_out' => 0, 'try_later' => 0, 'errors' => 0];
for ($b = (int)$first; $b < (int)$first + (int)$buyers; $b++) {
    $buyer = "php-buyer-$b";
    $r = escrow_retrying($ch, $url, $key, 'POST', '/v1/holds',
                         ['item' => $item, 'buyer' => $buyer, 'qty' => 1], "php-$item-$b");
    $code = $r['body']['code'] ?? '';
    if ($r['status'] === 201 || $r['status'] === 200) {
        $hold = $r['body']['id'];
        // ... take the payment here ...
        // no body: the whole hold (note: json_encode([]) is "[]", not an object)
        $c = escrow_retrying($ch, $url, $key, 'POST', "/v1/holds/$hold/confirm", null,
                             "php-confirm-$hold");
        if ($c['status'] === 200 && $c['body']['state'] === 'converted') {
            $tally['sold']++;
            echo "$buyer: bought 1 (hold $hold)\n";
        } else {
            $tally['errors']++;
            echo "$buyer: confirm answered {$c['status']} " . json_encode($c['body']) . "\n";
        }
    } elseif ($r['status'] === 409 && $code === 'sold_out') {
        $tally['sold_out']++;
        echo "$buyer: sold out\n";
    } elseif ($r['status'] === 503 && $code === 'try_later') {
        $tally['try_later']++;
        echo "$buyer: still held by others, try again in a minute\n";
    } else {
        $tally['errors']++;
        echo "$buyer: {$r['status']} " . json_encode($r['body']) . "\n";
    }
}
curl_close($ch);
$line = 'RESULT';
foreach ($tally as $k => $v) {
    $line .= " $k=$v";
}
echo "$line\n";
exit($tally['errors'] > 0 ? 1 : 0);
