// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @title FiatTokenDevnet — a USDC look-alike for the local devnet
/// @notice Mirrors the public interface and revert messages of Circle's FiatToken v2.2 (Base USDC) that payments
/// and swaps use: ERC-20 plus EIP-3009 (transfer/receive/cancel with authorization), EIP-712 with the domain
/// {name: "USD Coin", version: "2", chainId, verifyingContract}, and EIP-5267 `eip712Domain()`.
/// @dev The runtime code is placed at Base's USDC address with `anvil_setCode`, so no constructor ever runs:
/// there are no immutables, all metadata are constants, and the EIP-712 domain separator is computed on each call
/// from `block.chainid` and `address(this)`. Every piece of state starts out zero.
///
/// Storage begins at slot 9 so that balances (slot 9), allowances (slot 10) and the total supply (slot 11) sit where
/// FiatToken v2.2 keeps them; `balanceOf[a]` lives at `keccak256(abi.encode(a, uint256(9)))`. (Circle packs a
/// blacklist flag into bit 255 of that word; balances below 2^255 read the same in both.) The authorization states
/// (slot 12) do not match Circle's slot.
///
/// Differences from FiatToken v2.2, all deliberate: `mint` is open to anyone, and there are no owner, minter,
/// pauser, blacklister or rescuer roles, no EIP-2612 `permit`, and no ERC-1271 contract signatures (EIP-3009
/// signatures are checked with `ecrecover` only, as for an externally owned account).
contract FiatTokenDevnet layout at 9 {
    /// @notice keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)")
    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267;

    /// @notice keccak256("ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)")
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH =
        0xd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de8;

    /// @notice keccak256("CancelAuthorization(address authorizer,bytes32 nonce)")
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        0x158b0a9edf7a828aad02f63cd515c68ef2f50ba807396f6d12842833a1597429;

    /// @dev keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")
    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f;

    /// @dev Largest `s` accepted in a signature (secp256k1n / 2); larger values are the malleable twin.
    uint256 private constant MAX_S = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    string private constant NAME = "USD Coin";
    string private constant VERSION = "2";

    /// @notice Token balance of each account (slot 9).
    mapping(address account => uint256) public balanceOf;

    /// @notice Remaining amount `spender` may move on behalf of `owner` (slot 10).
    mapping(address owner => mapping(address spender => uint256)) public allowance;

    /// @notice Amount of tokens in existence (slot 11).
    uint256 public totalSupply;

    /// @notice Whether an EIP-3009 nonce of `authorizer` has been used or canceled (slot 12).
    mapping(address authorizer => mapping(bytes32 nonce => bool)) public authorizationState;

    /// @notice ERC-20 transfer, also emitted for mints (from the zero address).
    event Transfer(address indexed from, address indexed to, uint256 value);

    /// @notice ERC-20 approval.
    event Approval(address indexed owner, address indexed spender, uint256 value);

    /// @notice An EIP-3009 authorization was executed.
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    /// @notice An EIP-3009 authorization was canceled before use.
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// @notice Token name; also the EIP-712 domain name.
    function name() external pure returns (string memory) {
        return NAME;
    }

    /// @notice Token symbol.
    function symbol() external pure returns (string memory) {
        return "USDC";
    }

    /// @notice Number of decimals of the token's base unit.
    function decimals() external pure returns (uint8) {
        return 6;
    }

    /// @notice EIP-712 domain version.
    function version() external pure returns (string memory) {
        return VERSION;
    }

    /// @notice EIP-712 domain separator for the current chain and this address.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                EIP712_DOMAIN_TYPEHASH, keccak256(bytes(NAME)), keccak256(bytes(VERSION)), block.chainid, address(this)
            )
        );
    }

    /// @notice EIP-5267 description of the EIP-712 domain (name, version, chainId and verifyingContract are used).
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name_,
            string memory version_,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", NAME, VERSION, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    /// @notice Creates `amount` tokens for `to`.
    /// @dev DEVNET ONLY: anyone may mint any amount. Never deploy this contract where its tokens could have value.
    function mint(address to, uint256 amount) external {
        require(to != address(0), "FiatToken: mint to the zero address");
        require(amount > 0, "FiatToken: mint amount not greater than 0");
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    /// @notice Moves `value` tokens from the caller to `to`.
    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    /// @notice Moves `value` tokens from `from` to `to` using the caller's allowance (an unlimited allowance is
    /// decreased too, as in FiatToken).
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(value <= allowed, "ERC20: transfer amount exceeds allowance");
        _transfer(from, to, value);
        allowance[from][msg.sender] = allowed - value;
        return true;
    }

    /// @notice Sets the caller's allowance for `spender` to `value`.
    function approve(address spender, uint256 value) external returns (bool) {
        require(spender != address(0), "ERC20: approve to the zero address");
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    /// @notice Executes a transfer signed by `from` (EIP-3009); anyone may submit it.
    /// @param validAfter The authorization is valid only when block.timestamp > validAfter.
    /// @param validBefore The authorization is valid only when block.timestamp < validBefore.
    /// @param nonce 32 unique bytes chosen by `from`.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        bytes memory signature = abi.encodePacked(r, s, v);
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice As the (v, r, s) overload, with a 65-byte signature packed as r ‖ s ‖ v.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice Executes a transfer signed by `from` (EIP-3009); only the payee `to` may submit it, which keeps a
    /// third party from front-running the payee's own call.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        bytes memory signature = abi.encodePacked(r, s, v);
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice As the (v, r, s) overload, with a 65-byte signature packed as r ‖ s ‖ v.
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice Marks an unused authorization of `authorizer` as canceled, with the authorizer's signature of
    /// CancelAuthorization(authorizer, nonce).
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        _cancelAuthorization(authorizer, nonce, abi.encodePacked(r, s, v));
    }

    /// @notice As the (v, r, s) overload, with a 65-byte signature packed as r ‖ s ‖ v.
    function cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) external {
        _cancelAuthorization(authorizer, nonce, signature);
    }

    /// @dev Shared body of transferWithAuthorization and receiveWithAuthorization; `typeHash` selects which.
    function _transferWithAuthorization(
        bytes32 typeHash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        _requireUnusedAuthorization(from, nonce);
        _requireValidSignature(
            from, keccak256(abi.encode(typeHash, from, to, value, validAfter, validBefore, nonce)), signature
        );

        authorizationState[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _cancelAuthorization(address authorizer, bytes32 nonce, bytes memory signature) private {
        _requireUnusedAuthorization(authorizer, nonce);
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        _requireValidSignature(authorizer, structHash, signature);

        authorizationState[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _requireUnusedAuthorization(address authorizer, bytes32 nonce) private view {
        require(!authorizationState[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
    }

    /// @dev Requires `signature` (r ‖ s ‖ v) to be `signer`'s signature of the EIP-712 digest of `structHash`.
    /// Rejects malleable signatures (high s), v other than 27 or 28, and signatures that recover to nobody.
    function _requireValidSignature(address signer, bytes32 structHash, bytes memory signature) private view {
        require(signature.length == 65, "ECRecover: invalid signature length");
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly ("memory-safe") {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        require(uint256(s) <= MAX_S, "ECRecover: invalid signature 's' value");
        require(v == 27 || v == 28, "ECRecover: invalid signature 'v' value");

        bytes32 digest = keccak256(abi.encodePacked(hex"1901", DOMAIN_SEPARATOR(), structHash));
        address recovered = ecrecover(digest, v, r, s);
        require(recovered != address(0), "ECRecover: invalid signature");
        require(recovered == signer, "FiatTokenV2: invalid signature");
    }

    function _transfer(address from, address to, uint256 value) private {
        require(from != address(0), "ERC20: transfer from the zero address");
        require(to != address(0), "ERC20: transfer to the zero address");
        uint256 fromBalance = balanceOf[from];
        require(value <= fromBalance, "ERC20: transfer amount exceeds balance");
        balanceOf[from] = fromBalance - value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
